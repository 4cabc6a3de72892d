# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: accepted-invalid [CAI-DESCR-GRAMMAR]: cuda.cccl fed a mutant breaking CAI-DESCR-GRAMMAR: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-DESCR-GRAMMAR]
"""adversarial: cuda.cccl fed a dict breaking CAI-DESCR-GRAMMAR; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3], ["descr", []]]}')), 'CAI-DESCR-GRAMMAR', keep)
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
