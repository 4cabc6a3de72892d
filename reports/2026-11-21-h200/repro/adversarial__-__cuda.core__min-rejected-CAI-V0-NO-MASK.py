# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-V0-NO-MASK]: cuda.core fed a mutant breaking CAI-V0-NO-MASK: got BufferError: only CUDA Array Interface v3 or above is supported, expected a clean rejection (an exception) [CAI-V0-NO-MASK]
"""adversarial: cuda.core fed a dict breaking CAI-V0-NO-MASK; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 0], ["strides", {"$tuple": []}], ["mask", null]]}')), 'CAI-V0-NO-MASK', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
