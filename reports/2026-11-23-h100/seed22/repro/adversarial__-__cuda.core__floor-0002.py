# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-KEYS-UNKNOWN]: cuda.core fed a mutant breaking CAI-KEYS-UNKNOWN: got BufferError: only CUDA Array Interface v3 or above is supported, expected the values read back [CAI-KEYS-UNKNOWN]
"""adversarial: cuda.core fed a dict breaking CAI-KEYS-UNKNOWN; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2, 0, 2, 1]}], ["typestr", "|b1"], ["data", {"$tuple": [0, true]}], ["version", 1], ["strides", {"$tuple": [12, 9, 3, 1]}], ["mask", null], ["device", -18073]]}')), 'CAI-KEYS-UNKNOWN', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
