# caiconform reproducer: check adversarial, producer None, consumer numba-kernel
# the run saw: accepted-invalid [CAI-DATA-READONLY-BOOL]: numba-kernel fed a mutant breaking CAI-DATA-READONLY-BOOL: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-DATA-READONLY-BOOL]
"""adversarial: numba-kernel fed a dict breaking CAI-DATA-READONLY-BOOL; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, 0]}], ["version", 3]]}')), 'CAI-DATA-READONLY-BOOL', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
@cuda.jit
def copy1(src, dst):
    i = cuda.grid(1)
    if i < src.shape[0]:
        dst[i] = src[i]
dst = cuda.device_array(obj.__cuda_array_interface__['shape'], obj.__cuda_array_interface__['typestr'])
copy1[(dst.size + 127) // 128, 128](obj, dst)
result = dst.copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
