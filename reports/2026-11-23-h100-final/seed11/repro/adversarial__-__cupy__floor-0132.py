# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: accepted-invalid [CAI-DATA-POINTER-RANGE]: cupy fed a mutant breaking CAI-DATA-POINTER-RANGE: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-DATA-POINTER-RANGE]
"""adversarial: cupy fed a dict breaking CAI-DATA-POINTER-RANGE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [-1, false]}], ["version", 3]]}')), 'CAI-DATA-POINTER-RANGE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
