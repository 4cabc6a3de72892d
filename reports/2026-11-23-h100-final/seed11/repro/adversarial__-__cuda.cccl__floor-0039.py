# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: poisoned [CAI-SHAPE-INT]: CUDA context unusable after the example: cuCtxSynchronize failed with CUDA_ERROR_ILLEGAL_ADDRESS (700) (the example itself ended rejected: cuda.cccl fed a mutant breaking CAI-SHAPE-INT: got CUDAError: cuCtxSynchronize failed with CUDA_ERROR_ILLEGAL_ADDRESS (700), expected a clean rejection (an exception) [CAI-SHAPE-INT])
"""adversarial: cuda.cccl fed a dict breaking CAI-SHAPE-INT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [true]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3]]}')), 'CAI-SHAPE-INT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np
import cupy
from cuda.compute import OpKind, unary_transform
d = obj.__cuda_array_interface__
n = int(np.prod(d['shape']))
out = cupy.empty(n, dtype=d['typestr'])
unary_transform(d_in=obj, d_out=out, op=OpKind.IDENTITY, num_items=n)
result = out.get().reshape(d['shape'])  # C order; an F-order input differs
result = getattr(result, 'values', result)

print('accepted; read:', result)
