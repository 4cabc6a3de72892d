# caiconform reproducer: check adversarial, producer None, consumer numba-from-cai
# the run saw: rejected [CAI-VERSION-REQUIRED]: numba-from-cai fed a mutant breaking CAI-VERSION-REQUIRED: got TypeError: '<=' not supported between instances of 'int' and 'NoneType', expected a clean rejection (an exception) [CAI-VERSION-REQUIRED]
"""adversarial: numba-from-cai fed a dict breaking CAI-VERSION-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "<c8"], ["data", {"$tuple": [0, true]}], ["strides", {"$tuple": [24]}], ["descr", [{"$tuple": ["", "<c8"]}]], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [61634816, false]}], ["version", 3]]}}], ["stream", 1041894]]}')), 'CAI-VERSION-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
