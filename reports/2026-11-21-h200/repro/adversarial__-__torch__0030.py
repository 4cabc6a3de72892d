# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-DATA-POINTER-RANGE]: torch fed a mutant breaking CAI-DATA-POINTER-RANGE: got OverflowError: Python int too large to convert to C unsigned long, expected a clean rejection (an exception) [CAI-DATA-POINTER-RANGE]
"""adversarial: torch fed a dict breaking CAI-DATA-POINTER-RANGE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0, 4]}], ["typestr", "<u4"], ["data", {"$tuple": [18446744073709551616, true]}], ["version", 3], ["strides", {"$tuple": [4, 4]}], ["descr", [{"$tuple": ["", "<u4"]}]]]}')), 'CAI-DATA-POINTER-RANGE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
