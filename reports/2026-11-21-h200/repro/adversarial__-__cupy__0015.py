# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-SHAPE-INT]: cupy fed a mutant breaking CAI-SHAPE-INT: got TypeError: 'float' object cannot be interpreted as an integer, expected a clean rejection (an exception) [CAI-SHAPE-INT]
"""adversarial: cupy fed a dict breaking CAI-SHAPE-INT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [1.0]}], ["typestr", "|b1"], ["data", {"$tuple": [512, false]}], ["version", 1], ["strides", {"$tuple": [1]}]]}')), 'CAI-SHAPE-INT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
