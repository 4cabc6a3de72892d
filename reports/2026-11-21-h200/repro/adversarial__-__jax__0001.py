# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-DATA-DEVICE-ACCESSIBLE]: jax fed host-pointer |b1: got JaxRuntimeError: INVALID_ARGUMENT: Not able to get the device_ordinal: CUDA_ERROR_INVALID_VALUE: invalid argument, expected a clean rejection (an exception) [CAI-DATA-DEVICE-ACCESSIBLE]
"""adversarial: jax fed a host-pointer export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "host-pointer", "typestr": "|b1", "layout": {"shape": [1], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
