# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-VERSION-INT]: torch fed a mutant breaking CAI-VERSION-INT: got TypeError: the read only flag is not supported, should always be False, expected a clean rejection (an exception) [CAI-VERSION-INT]
"""adversarial: torch fed a dict breaking CAI-VERSION-INT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2]}], ["typestr", "<i4"], ["data", {"$tuple": [512, true]}], ["version", true], ["strides", {"$tuple": [4]}]]}')), 'CAI-VERSION-INT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
