# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: crash: worker died (SIGABRT): Fatal Python error: Aborted
"""adversarial: torch fed a negative-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "negative-strides", "typestr": "|b1", "layout": {"shape": [1, 1, 3], "strides": [3, -3, -1], "offset": 2, "pad": 0, "kind": "negative", "portable": true}, "seed": 129824875}'))

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
