# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-STRIDES-NDIM]: cupy fed a mutant breaking CAI-STRIDES-NDIM: got ValueError: len(shape) != len(strides), expected a clean rejection (an exception) [CAI-STRIDES-NDIM]
"""adversarial: cupy fed a dict breaking CAI-STRIDES-NDIM; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2]}], ["typestr", "<c32"], ["data", {"$tuple": [15104, false]}], ["version", 2], ["strides", {"$tuple": [96, 3]}], ["descr", [{"$tuple": ["", "<c32"]}]]]}')), 'CAI-STRIDES-NDIM', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
