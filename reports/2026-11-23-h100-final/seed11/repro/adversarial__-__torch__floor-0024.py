# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: accepted-invalid [CAI-SHAPE-TUPLE]: torch fed a mutant breaking CAI-SHAPE-TUPLE: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-SHAPE-TUPLE]
"""adversarial: torch fed a dict breaking CAI-SHAPE-TUPLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", [0]], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3]]}')), 'CAI-SHAPE-TUPLE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
