# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-DATA-POINTER-RANGE]: torch fed a mutant breaking CAI-DATA-POINTER-RANGE: got RuntimeError: The specified pointer resides on host memory and is not registered with any CUDA device., expected a clean rejection (an exception) [CAI-DATA-POINTER-RANGE]
"""adversarial: torch fed a dict breaking CAI-DATA-POINTER-RANGE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [-257, false]}], ["version", 3], ["strides", {"$tuple": []}]]}')), 'CAI-DATA-POINTER-RANGE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
