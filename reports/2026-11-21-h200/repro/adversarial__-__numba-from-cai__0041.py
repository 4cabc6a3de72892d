# caiconform reproducer: check adversarial, producer None, consumer numba-from-cai
# the run saw: rejected [CAI-DATA-REQUIRED]: numba-from-cai fed a mutant breaking CAI-DATA-REQUIRED: got KeyError: 'data', expected a clean rejection (an exception) [CAI-DATA-REQUIRED]
"""adversarial: numba-from-cai fed a dict breaking CAI-DATA-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|u1"], ["version", 1], ["strides", {"$tuple": []}]]}')), 'CAI-DATA-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
