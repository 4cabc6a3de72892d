# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: accepted-invalid [CAI-DATA-EXTENT-IN-ALLOCATION]: cuda.cccl fed extent-past-allocation <f4: got accepted, read shape (1048579, 4), expected a clean rejection (an exception) [CAI-DATA-EXTENT-IN-ALLOCATION]
"""adversarial: cuda.cccl fed a extent-past-allocation export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "extent-past-allocation", "typestr": "<f4", "layout": {"shape": [3, 4], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 0}'))

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
