# caiconform reproducer: check adversarial, producer None, consumer numba-from-cai
# the run saw: rejected [CAI-MASK-SHAPE]: numba-from-cai fed a mutant breaking CAI-MASK-SHAPE: got NotImplementedError: Masked arrays are not supported, expected a clean rejection (an exception) [CAI-MASK-SHAPE]
"""adversarial: numba-from-cai fed a dict breaking CAI-MASK-SHAPE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2, 3, 2, 4]}], ["typestr", "<u2"], ["data", {"$tuple": [256, true]}], ["version", 1], ["strides", {"$tuple": [60, 18, 8, 2]}], ["descr", [{"$tuple": ["", "<u2"]}]], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": [2, 2, 3, 2, 4]}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 1]]}}]]}')), 'CAI-MASK-SHAPE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
