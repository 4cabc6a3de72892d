# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-PORT-TYPESTR-KIND]: cupy fed negative-strides <c32: got ValueError: Unsupported dtype complex256, expected the values read back [CAI-PORT-TYPESTR-KIND]
"""adversarial: cupy fed a negative-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "negative-strides", "typestr": "<c32", "layout": {"shape": [2], "strides": [-32], "offset": 32, "pad": 0, "kind": "negative", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
