# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-STREAM-HANDLE]: cupy fed a mutant breaking CAI-STREAM-HANDLE: got CUDARuntimeError: cudaErrorInvalidResourceHandle: invalid resource handle, expected a clean rejection (an exception) [CAI-STREAM-HANDLE]
"""adversarial: cupy fed a dict breaking CAI-STREAM-HANDLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3], ["strides", {"$tuple": [1]}], ["stream", -1]]}')), 'CAI-STREAM-HANDLE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
