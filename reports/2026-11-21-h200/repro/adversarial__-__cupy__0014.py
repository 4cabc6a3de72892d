# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-SHAPE-INT]: cupy fed a mutant breaking CAI-SHAPE-INT: got ValueError: CuPy currently does not support masked arrays., expected a clean rejection (an exception) [CAI-SHAPE-INT]
"""adversarial: cupy fed a dict breaking CAI-SHAPE-INT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [null, 2]}], ["typestr", "<f8"], ["data", {"$tuple": [26371425536, true]}], ["version", 1], ["strides", {"$tuple": [24, 8]}], ["descr", [{"$tuple": ["", "<f8"]}]], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": [2, 1]}], ["typestr", "|b1"], ["data", {"$tuple": [11520, false]}], ["version", 1]]}}]]}')), 'CAI-SHAPE-INT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
