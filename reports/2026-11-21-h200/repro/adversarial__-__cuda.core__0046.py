# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-TYPESTR-GRAMMAR]: cuda.core fed a mutant breaking CAI-TYPESTR-GRAMMAR: got TypeError: data type '<b2' not understood, expected a clean rejection (an exception) [CAI-TYPESTR-GRAMMAR]
"""adversarial: cuda.core fed a dict breaking CAI-TYPESTR-GRAMMAR; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0, 3, 0, 3]}], ["typestr", "<b2"], ["data", {"$tuple": [0, true]}], ["version", 3], ["strides", {"$tuple": [0, 12, 0, 4]}], ["descr", [{"$tuple": ["", "<f4"]}]]]}')), 'CAI-TYPESTR-GRAMMAR', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
