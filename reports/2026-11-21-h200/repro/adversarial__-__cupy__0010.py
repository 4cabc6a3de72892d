# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: crash: worker died (SIGSEGV): Fatal Python error: Segmentation fault
"""adversarial: cupy fed a dict breaking CAI-STRIDES-TYPE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [1]}], ["typestr", "<i8"], ["data", {"$tuple": [19200, false]}], ["version", 3], ["strides", [0]], ["stream", 1990033576604]]}')), 'CAI-STRIDES-TYPE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
