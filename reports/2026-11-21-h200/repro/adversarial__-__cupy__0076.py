# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-TYPESTR-REQUIRED]: cupy fed a mutant breaking CAI-TYPESTR-REQUIRED: got KeyError: 'typestr', expected a clean rejection (an exception) [CAI-TYPESTR-REQUIRED]
"""adversarial: cupy fed a dict breaking CAI-TYPESTR-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["data", {"$tuple": [256, false]}], ["version", 1]]}')), 'CAI-TYPESTR-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
