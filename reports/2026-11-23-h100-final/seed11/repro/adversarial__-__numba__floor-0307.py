# caiconform reproducer: check adversarial, producer None, consumer numba
# the run saw: crash: worker died (SIGSEGV): Fatal Python error: Segmentation fault
"""adversarial: numba fed a dict breaking CAI-V2-STREAM-UNDEFINED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 2], ["stream", 32512]]}')), 'CAI-V2-STREAM-UNDEFINED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.as_cuda_array(obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
