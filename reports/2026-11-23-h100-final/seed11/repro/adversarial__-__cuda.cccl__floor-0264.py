# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: accepted-invalid [CAI-MASK-SHAPE]: cuda.cccl fed a mutant breaking CAI-MASK-SHAPE: got accepted, read shape (), expected a clean rejection (an exception) [CAI-MASK-SHAPE]
"""adversarial: cuda.cccl fed a dict breaking CAI-MASK-SHAPE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": [2]}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3]]}}]]}')), 'CAI-MASK-SHAPE', keep)
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
