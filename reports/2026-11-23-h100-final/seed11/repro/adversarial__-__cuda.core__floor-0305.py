# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-V2-STREAM-UNDEFINED]: cuda.core fed a mutant breaking CAI-V2-STREAM-UNDEFINED: got BufferError: only CUDA Array Interface v3 or above is supported, expected the values read back [CAI-V2-STREAM-UNDEFINED]
"""adversarial: cuda.core fed a dict breaking CAI-V2-STREAM-UNDEFINED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 2], ["stream", 1]]}')), 'CAI-V2-STREAM-UNDEFINED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
