# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-TYPESTR-REQUIRED]: cuda.core fed a mutant breaking CAI-TYPESTR-REQUIRED: got BufferError: only CUDA Array Interface v3 or above is supported, expected a clean rejection (an exception) [CAI-TYPESTR-REQUIRED]
"""adversarial: cuda.core fed a dict breaking CAI-TYPESTR-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [1, 0, 4, 0]}], ["data", {"$tuple": [0, true]}], ["version", 1], ["strides", {"$tuple": [40, 34, 8, 2]}], ["descr", [{"$tuple": ["", "<i2"]}]], ["mask", null]]}')), 'CAI-TYPESTR-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
