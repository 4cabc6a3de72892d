# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: poisoned [CAI-DATA-DEVICE-ACCESSIBLE]: CUDA context unusable after the example: cuCtxSynchronize failed with CUDA_ERROR_ILLEGAL_ADDRESS (700) (the example itself ended rejected: cuda.cccl fed host-pointer |b1: got CUDAError: cuCtxSynchronize failed with CUDA_ERROR_ILLEGAL_ADDRESS (700), expected a clean rejection (an exception) [CAI-DATA-DEVICE-ACCESSIBLE])
"""adversarial: cuda.cccl fed a host-pointer export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "host-pointer", "typestr": "|b1", "layout": {"shape": [1], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import numpy as np
import cupy
from cuda.compute import OpKind, unary_transform
d = obj.__cuda_array_interface__
n = int(np.prod(d['shape']))
out = cupy.empty(n, dtype=d['typestr'])
unary_transform(d_in=obj, d_out=out, op=OpKind.IDENTITY, num_items=n)
result = out.get().reshape(d['shape'])  # C order; an F-order input differs
result = getattr(result, 'values', result)

print('accepted; read:', result)
