# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: accepted-invalid [CAI-STREAM-LIVE]: cuda.cccl fed stream-bogus |b1: got accepted, read shape (1,), expected a clean rejection (an exception) [CAI-STREAM-LIVE]
"""adversarial: cuda.cccl fed a stream-bogus export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "stream-bogus", "typestr": "|b1", "layout": {"shape": [1], "strides": [1], "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 3}'))

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
