# caiconform reproducer: check adversarial, producer None, consumer numba-from-cai
# the run saw: rejected [CAI-DATA-POINTER-RANGE]: numba-from-cai fed a mutant breaking CAI-DATA-POINTER-RANGE: got NotImplementedError: Masked arrays are not supported, expected a clean rejection (an exception) [CAI-DATA-POINTER-RANGE]
"""adversarial: numba-from-cai fed a dict breaking CAI-DATA-POINTER-RANGE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0, 0, 3, 2]}], ["typestr", "<u2"], ["data", {"$tuple": [-1, true]}], ["version", 1], ["strides", null], ["descr", [{"$tuple": ["", "<u2"]}]], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": [0, 3, 1]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 1]]}}]]}')), 'CAI-DATA-POINTER-RANGE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
