# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: accepted-invalid [CAI-STREAM-TYPE]: cupy fed a mutant breaking CAI-STREAM-TYPE: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-STREAM-TYPE]
"""adversarial: cupy fed a dict breaking CAI-STREAM-TYPE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3], ["stream", true]]}')), 'CAI-STREAM-TYPE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
