# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: accepted-invalid [CAI-VERSION-REQUIRED]: cupy fed a mutant breaking CAI-VERSION-REQUIRED: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-VERSION-REQUIRED]
"""adversarial: cupy fed a dict breaking CAI-VERSION-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}]]}')), 'CAI-VERSION-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
