# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: crash: worker died (SIGABRT): Fatal Python error: Aborted
"""adversarial: torch fed a dict breaking CAI-STREAM-HANDLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [3, 4, 3, 3]}], ["typestr", "|i1"], ["data", {"$tuple": [363, false]}], ["version", 3], ["strides", {"$tuple": [-36, -9, -3, -1]}], ["descr", [{"$tuple": ["", "|i1"]}]], ["stream", 104640956259650600960]]}')), 'CAI-STREAM-HANDLE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
