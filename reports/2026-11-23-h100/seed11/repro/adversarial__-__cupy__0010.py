# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: crash: worker died (SIGSEGV): Fatal Python error: Segmentation fault
"""adversarial: cupy fed a dict breaking CAI-SHAPE-NONNEGATIVE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [3, 2, -565394, 4]}], ["typestr", "<c16"], ["data", {"$tuple": [114432, false]}], ["version", 3], ["strides", {"$tuple": [16, 48, 96, 96]}], ["descr", [{"$tuple": ["", "<c16"]}]], ["stream", 21833]]}')), 'CAI-SHAPE-NONNEGATIVE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
