# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: accepted-invalid [CAI-STREAM-LIVE]: torch fed stream-bogus <f4: got accepted, read shape (3, 4), expected a clean rejection (an exception) [CAI-STREAM-LIVE]
"""adversarial: torch fed a stream-bogus export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "stream-bogus", "typestr": "<f4", "layout": {"shape": [3, 4], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
