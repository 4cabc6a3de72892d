# caiconform reproducer: check adversarial, producer None, consumer numba-from-cai
# the run saw: accepted-invalid [CAI-DATA-ZERO-SIZE-NULL]: numba-from-cai fed a mutant breaking CAI-DATA-ZERO-SIZE-NULL: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-DATA-ZERO-SIZE-NULL]
"""adversarial: numba-from-cai fed a dict breaking CAI-DATA-ZERO-SIZE-NULL; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3]]}')), 'CAI-DATA-ZERO-SIZE-NULL', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
