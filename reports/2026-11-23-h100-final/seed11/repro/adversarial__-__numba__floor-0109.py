# caiconform reproducer: check adversarial, producer None, consumer numba
# the run saw: accepted-invalid [CAI-DATA-TUPLE]: numba fed a mutant breaking CAI-DATA-TUPLE: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-DATA-TUPLE]
"""adversarial: numba fed a dict breaking CAI-DATA-TUPLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", [0, false]], ["version", 3]]}')), 'CAI-DATA-TUPLE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.as_cuda_array(obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
