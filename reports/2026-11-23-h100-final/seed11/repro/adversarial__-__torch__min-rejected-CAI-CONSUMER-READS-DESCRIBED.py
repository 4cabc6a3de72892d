# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-CONSUMER-READS-DESCRIBED]: torch fed odd-strides <i2: got ValueError: given array strides not a multiple of the element byte size. Make a copy of the array to reallocate the memory., expected the values read back [CAI-CONSUMER-READS-DESCRIBED]
"""adversarial: torch fed a odd-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "odd-strides", "typestr": "<i2", "layout": {"shape": [1], "strides": [3], "offset": 0, "pad": 0, "kind": "odd", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
