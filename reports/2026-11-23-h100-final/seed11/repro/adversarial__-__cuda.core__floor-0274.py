# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: accepted-invalid [CAI-STREAM-TYPE]: cuda.core fed a mutant breaking CAI-STREAM-TYPE: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-STREAM-TYPE]
"""adversarial: cuda.core fed a dict breaking CAI-STREAM-TYPE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3], ["stream", true]]}')), 'CAI-STREAM-TYPE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
