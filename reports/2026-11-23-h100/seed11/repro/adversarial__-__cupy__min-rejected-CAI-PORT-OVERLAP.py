# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-PORT-OVERLAP]: cupy fed broadcast <c32: got ValueError: Unsupported dtype complex256, expected the values read back [CAI-PORT-OVERLAP]
"""adversarial: cupy fed a broadcast export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "broadcast", "typestr": "<c32", "layout": {"shape": [2], "strides": [0], "offset": 0, "pad": 0, "kind": "broadcast", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
