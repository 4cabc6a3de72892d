# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: rejected [CAI-PORT-STRIDES-ITEMSIZE]: cuda.cccl fed odd-strides <c8: got ValueError: Non-contiguous arrays are not supported., expected the values read back [CAI-PORT-STRIDES-ITEMSIZE]
"""adversarial: cuda.cccl fed a odd-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "odd-strides", "typestr": "<c8", "layout": {"shape": [4], "strides": [9], "offset": 0, "pad": 0, "kind": "odd", "portable": false}, "seed": 0}'))

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
