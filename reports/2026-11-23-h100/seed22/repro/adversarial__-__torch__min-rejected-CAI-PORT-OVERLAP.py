# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-PORT-OVERLAP]: torch fed broadcast <c32: got TypeError: can't convert np.ndarray of type numpy.clongdouble. The only supported types are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, uin..., expected the values read back [CAI-PORT-OVERLAP]
"""adversarial: torch fed a broadcast export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "broadcast", "typestr": "<c32", "layout": {"shape": [2], "strides": [0], "offset": 0, "pad": 0, "kind": "broadcast", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
