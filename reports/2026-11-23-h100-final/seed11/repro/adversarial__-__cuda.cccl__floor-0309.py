# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: rejected [CAI-V2-STREAM-UNDEFINED]: cuda.cccl fed a mutant breaking CAI-V2-STREAM-UNDEFINED: got ValueError: Non-contiguous arrays are not supported., expected the values read back [CAI-V2-STREAM-UNDEFINED]
"""adversarial: cuda.cccl fed a dict breaking CAI-V2-STREAM-UNDEFINED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2]}], ["typestr", "<c16"], ["data", {"$tuple": [14685868085248, false]}], ["version", 0], ["strides", {"$tuple": [0]}], ["stream", 2]]}')), 'CAI-V2-STREAM-UNDEFINED', keep)
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
