# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-TYPESTR-REQUIRED]: torch fed a mutant breaking CAI-TYPESTR-REQUIRED: got TypeError: attribute `typestr` must exist, expected a clean rejection (an exception) [CAI-TYPESTR-REQUIRED]
"""adversarial: torch fed a dict breaking CAI-TYPESTR-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["data", {"$tuple": [256, false]}], ["version", 0], ["strides", {"$tuple": []}], ["descr", [{"$tuple": ["", "<f2"]}]]]}')), 'CAI-TYPESTR-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
