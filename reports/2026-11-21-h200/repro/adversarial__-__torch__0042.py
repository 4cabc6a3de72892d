# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: rejected [CAI-DATA-EXTENT-IN-ALLOCATION]: torch fed extent-past-allocation <c32: got TypeError: can't convert np.ndarray of type numpy.clongdouble. The only supported types are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, uin..., expected a clean rejection (an exception) [CAI-DATA-EXTENT-IN-ALLOCATION]
"""adversarial: torch fed a extent-past-allocation export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "extent-past-allocation", "typestr": "<c32", "layout": {"shape": [2, 2, 3], "strides": [192, 96, 32], "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 2}'))

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
