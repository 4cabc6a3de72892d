# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-STREAM-TYPE]: cupy fed a mutant breaking CAI-STREAM-TYPE: got TypeError: an integer is required, expected a clean rejection (an exception) [CAI-STREAM-TYPE]
"""adversarial: cupy fed a dict breaking CAI-STREAM-TYPE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [512, false]}], ["version", 3], ["strides", {"$tuple": []}], ["stream", 1.0]]}')), 'CAI-STREAM-TYPE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
