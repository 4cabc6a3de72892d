# caiconform reproducer: check adversarial, producer None, consumer numba-from-cai
# the run saw: crash: worker died (SIGSEGV): Fatal Python error: Segmentation fault
"""adversarial: numba-from-cai fed a dict breaking CAI-SHAPE-NONNEGATIVE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2, 1, 3, -6227020800]}], ["typestr", "|u1"], ["data", {"$tuple": [979456, true]}], ["version", 3], ["strides", {"$tuple": [21, 18, 5, 1]}], ["descr", [{"$tuple": ["", "|u1"]}]], ["mask", null], ["stream", 19043]]}')), 'CAI-SHAPE-NONNEGATIVE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
