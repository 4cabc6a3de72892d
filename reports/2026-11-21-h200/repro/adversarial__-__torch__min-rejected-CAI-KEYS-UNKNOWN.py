# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-KEYS-UNKNOWN]: torch fed a mutant breaking CAI-KEYS-UNKNOWN: got TypeError: the read only flag is not supported, should always be False, expected the values read back [CAI-KEYS-UNKNOWN]
"""adversarial: torch fed a dict breaking CAI-KEYS-UNKNOWN; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, true]}], ["version", 2], ["owner", null]]}')), 'CAI-KEYS-UNKNOWN', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
