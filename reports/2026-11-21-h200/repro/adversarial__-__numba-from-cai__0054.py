# caiconform reproducer: check adversarial, producer None, consumer numba-from-cai
# the run saw: rejected [CAI-SHAPE-REQUIRED]: numba-from-cai fed a mutant breaking CAI-SHAPE-REQUIRED: got KeyError: 'shape', expected a clean rejection (an exception) [CAI-SHAPE-REQUIRED]
"""adversarial: numba-from-cai fed a dict breaking CAI-SHAPE-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["typestr", "|i1"], ["data", {"$tuple": [256, false]}], ["version", 2], ["strides", {"$tuple": []}], ["descr", [{"$tuple": ["", "|i1"]}]]]}')), 'CAI-SHAPE-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
