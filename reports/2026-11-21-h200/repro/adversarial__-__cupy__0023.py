# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-DATA-DEVICE-ACCESSIBLE]: cupy fed host-pointer <c32: got CUDARuntimeError: cudaErrorInvalidDevice: invalid device ordinal, expected a clean rejection (an exception) [CAI-DATA-DEVICE-ACCESSIBLE]
"""adversarial: cupy fed a host-pointer export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "host-pointer", "typestr": "<c32", "layout": {"shape": [3, 4, 2, 2], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 377}'))

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
