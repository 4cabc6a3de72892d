# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: crash: worker died (SIGSEGV): Fatal Python error: Segmentation fault
"""adversarial: cupy fed a dict breaking CAI-DATA-ZERO-SIZE-NULL; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "<i2"], ["data", {"$tuple": [281474976710400, true]}], ["version", 3], ["strides", {"$tuple": [2]}], ["stream", 253657]]}')), 'CAI-DATA-ZERO-SIZE-NULL', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
