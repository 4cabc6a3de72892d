# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-V0-NO-MASK]: cuda.core fed a mutant breaking CAI-V0-NO-MASK: got BufferError: only CUDA Array Interface v3 or above is supported, expected a clean rejection (an exception) [CAI-V0-NO-MASK]
"""adversarial: cuda.core fed a dict breaking CAI-V0-NO-MASK; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [3, 1, 3, 3]}], ["typestr", "|b1"], ["data", {"$tuple": [134930, true]}], ["version", 0], ["strides", {"$tuple": [-9, 9, 3, 1]}], ["descr", [{"$tuple": ["", "|b1"]}]], ["mask", null]]}')), 'CAI-V0-NO-MASK', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
