# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: rejected [CAI-PORT-OVERLAP]: cuda.cccl fed broadcast <u8: got ValueError: Non-contiguous arrays are not supported., expected the values read back [CAI-PORT-OVERLAP]
"""adversarial: cuda.cccl fed a broadcast export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "broadcast", "typestr": "<u8", "layout": {"shape": [3, 3], "strides": [0, 8], "offset": 0, "pad": 0, "kind": "broadcast", "portable": true}, "seed": 403}'))

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
