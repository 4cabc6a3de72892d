# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-SHAPE-INT]: cuda.core fed a mutant breaking CAI-SHAPE-INT: got BufferError: only CUDA Array Interface v3 or above is supported, expected a clean rejection (an exception) [CAI-SHAPE-INT]
"""adversarial: cuda.core fed a dict breaking CAI-SHAPE-INT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [true]}], ["typestr", "<i4"], ["data", {"$tuple": [0, false]}], ["version", 1], ["strides", {"$tuple": [0]}], ["descr", [{"$tuple": ["", "<i4"]}]]]}')), 'CAI-SHAPE-INT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
