# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-STRIDES-NDIM]: cuda.core fed a mutant breaking CAI-STRIDES-NDIM: got ValueError: Strides, if provided, must have the same length as shape. Shape has 0 dimensions, but strides has 1 elements., expected a clean rejection (an exception) [CAI-STRIDES-NDIM]
"""adversarial: cuda.core fed a dict breaking CAI-STRIDES-NDIM; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3], ["strides", {"$tuple": [1]}]]}')), 'CAI-STRIDES-NDIM', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
