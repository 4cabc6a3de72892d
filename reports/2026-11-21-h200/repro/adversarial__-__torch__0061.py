# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-DATA-NONZERO-SIZE-NONNULL]: torch fed a mutant breaking CAI-DATA-NONZERO-SIZE-NONNULL: got TypeError: the read only flag is not supported, should always be False, expected a clean rejection (an exception) [CAI-DATA-NONZERO-SIZE-NONNULL]
"""adversarial: torch fed a dict breaking CAI-DATA-NONZERO-SIZE-NONNULL; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [1, 1, 4, 1]}], ["typestr", "<i8"], ["data", {"$tuple": [0, true]}], ["version", 1], ["strides", null], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": [1]}], ["typestr", "|b1"], ["data", {"$tuple": [2360035303424, false]}], ["version", 1]]}}]]}')), 'CAI-DATA-NONZERO-SIZE-NONNULL', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
