# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-TYPESTR-GRAMMAR]: cupy fed a mutant breaking CAI-TYPESTR-GRAMMAR: got TypeError: data type '' not understood, expected a clean rejection (an exception) [CAI-TYPESTR-GRAMMAR]
"""adversarial: cupy fed a dict breaking CAI-TYPESTR-GRAMMAR; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", ""], ["data", {"$tuple": [256, false]}], ["version", 3]]}')), 'CAI-TYPESTR-GRAMMAR', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
