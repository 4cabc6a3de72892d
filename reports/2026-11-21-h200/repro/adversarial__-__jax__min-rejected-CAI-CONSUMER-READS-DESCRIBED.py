# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-CONSUMER-READS-DESCRIBED]: jax fed negative-strides <f16: got JaxRuntimeError: INVALID_ARGUMENT: Unknown NumPy dtype dtype('float128') char g kind f itemsize 16, expected the values read back [CAI-CONSUMER-READS-DESCRIBED]
"""adversarial: jax fed a negative-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "negative-strides", "typestr": "<f16", "layout": {"shape": [1], "strides": [-16], "offset": 0, "pad": 0, "kind": "negative", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
