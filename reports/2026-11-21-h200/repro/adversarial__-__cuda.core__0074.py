# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-SHAPE-REQUIRED]: cuda.core fed a mutant breaking CAI-SHAPE-REQUIRED: got BufferError: only CUDA Array Interface v3 or above is supported, expected a clean rejection (an exception) [CAI-SHAPE-REQUIRED]
"""adversarial: cuda.core fed a dict breaking CAI-SHAPE-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["typestr", "|u1"], ["data", {"$tuple": [256, false]}], ["version", 1], ["strides", {"$tuple": []}]]}')), 'CAI-SHAPE-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
