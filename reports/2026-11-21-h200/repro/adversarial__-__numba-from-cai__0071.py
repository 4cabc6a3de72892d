# caiconform reproducer: check adversarial, producer None, consumer numba-from-cai
# the run saw: accepted-invalid [CAI-DATA-TUPLE]: numba-from-cai fed a mutant breaking CAI-DATA-TUPLE: got accepted, read shape (3, 0, 2, 2), expected a clean rejection (an exception) [CAI-DATA-TUPLE]
"""adversarial: numba-from-cai fed a dict breaking CAI-DATA-TUPLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [3, 0, 2, 2]}], ["typestr", "<u8"], ["data", {"$tuple": [0]}], ["version", 2], ["strides", {"$tuple": [80, 80, 32, 8]}], ["mask", null]]}')), 'CAI-DATA-TUPLE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
