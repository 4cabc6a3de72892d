# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: rejected [CAI-PORT-NEGATIVE-STRIDES]: cuda.cccl fed negative-strides <f4: got ValueError: Non-contiguous arrays are not supported., expected the values read back [CAI-PORT-NEGATIVE-STRIDES]
"""adversarial: cuda.cccl fed a negative-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "negative-strides", "typestr": "<f4", "layout": {"shape": [2, 2, 1, 2], "strides": [16, -8, 8, 4], "offset": 8, "pad": 0, "kind": "negative", "portable": true}, "seed": 380994}'))

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
