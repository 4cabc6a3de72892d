# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: accepted-invalid [CAI-DESCR-CONSISTENT]: cupy fed a mutant breaking CAI-DESCR-CONSISTENT: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-DESCR-CONSISTENT]
"""adversarial: cupy fed a dict breaking CAI-DESCR-CONSISTENT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3], ["descr", [{"$tuple": ["", "|V2"]}]]]}')), 'CAI-DESCR-CONSISTENT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
