# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-DATA-DEVICE-ACCESSIBLE]: torch fed host-pointer <f4: got RuntimeError: The specified pointer resides on host memory and is not registered with any CUDA device., expected a clean rejection (an exception) [CAI-DATA-DEVICE-ACCESSIBLE]
"""adversarial: torch fed a host-pointer export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "host-pointer", "typestr": "<f4", "layout": {"shape": [1, 3], "strides": [12, 4], "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 54918}'))

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
