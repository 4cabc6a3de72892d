# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-SHAPE-TUPLE]: cupy fed a mutant breaking CAI-SHAPE-TUPLE: got TypeError: Expected tuple, got list, expected a clean rejection (an exception) [CAI-SHAPE-TUPLE]
"""adversarial: cupy fed a dict breaking CAI-SHAPE-TUPLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", []], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 2], ["strides", {"$tuple": []}]]}')), 'CAI-SHAPE-TUPLE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
