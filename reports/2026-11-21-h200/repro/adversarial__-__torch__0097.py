# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-DATA-POINTER-RANGE]: torch fed a mutant breaking CAI-DATA-POINTER-RANGE: got TypeError: the read only flag is not supported, should always be False, expected a clean rejection (an exception) [CAI-DATA-POINTER-RANGE]
"""adversarial: torch fed a dict breaking CAI-DATA-POINTER-RANGE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "<i8"], ["data", {"$tuple": [-2331239425, true]}], ["version", 2], ["strides", {"$tuple": []}], ["descr", [{"$tuple": ["", "<i8"]}]]]}')), 'CAI-DATA-POINTER-RANGE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
