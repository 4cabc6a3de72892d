# caiconform reproducer: check adversarial, producer None, consumer numba
# the run saw: accepted-invalid [CAI-VERSION-KNOWN]: numba fed a mutant breaking CAI-VERSION-KNOWN: got accepted, read shape (), expected a clean rejection (an exception) [CAI-VERSION-KNOWN]
"""adversarial: numba fed a dict breaking CAI-VERSION-KNOWN; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|i1"], ["data", {"$tuple": [256, false]}], ["version", 4], ["strides", {"$tuple": []}]]}')), 'CAI-VERSION-KNOWN', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.as_cuda_array(obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
