# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: crash: worker died (SIGSEGV): Fatal Python error: Segmentation fault
"""adversarial: cuda.core fed a dict breaking CAI-DESCR-GRAMMAR; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [1, 4, 1]}], ["typestr", "<f8"], ["data", {"$tuple": [733696, true]}], ["version", 3], ["strides", {"$tuple": [0, 8, 0]}], ["descr", []], ["stream", 345]]}')), 'CAI-DESCR-GRAMMAR', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
