# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-STRIDES-NDIM]: cuda.core fed a mutant breaking CAI-STRIDES-NDIM: got BufferError: only CUDA Array Interface v3 or above is supported, expected a clean rejection (an exception) [CAI-STRIDES-NDIM]
"""adversarial: cuda.core fed a dict breaking CAI-STRIDES-NDIM; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [3, 4]}], ["typestr", "|b1"], ["data", {"$tuple": [35080, false]}], ["version", 2], ["strides", {"$tuple": [12, 1, 47]}], ["descr", [{"$tuple": ["", "|b1"]}]], ["mask", null]]}')), 'CAI-STRIDES-NDIM', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
