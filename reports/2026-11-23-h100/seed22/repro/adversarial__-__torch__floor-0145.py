# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-V2-STREAM-UNDEFINED]: torch fed a mutant breaking CAI-V2-STREAM-UNDEFINED: got TypeError: the read only flag is not supported, should always be False, expected the values read back [CAI-V2-STREAM-UNDEFINED]
"""adversarial: torch fed a dict breaking CAI-V2-STREAM-UNDEFINED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [4, 0, 2, 0]}], ["typestr", "|u1"], ["data", {"$tuple": [0, true]}], ["version", 0], ["strides", null], ["stream", 32512]]}')), 'CAI-V2-STREAM-UNDEFINED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
