# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-CONSUMER-READS-DESCRIBED]: jax fed broadcast <f16: got JaxRuntimeError: INVALID_ARGUMENT: Unknown NumPy dtype dtype('float128') char g kind f itemsize 16, expected the values read back [CAI-CONSUMER-READS-DESCRIBED]
"""adversarial: jax fed a broadcast export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "broadcast", "typestr": "<f16", "layout": {"shape": [1, 1], "strides": [0, 16], "offset": 0, "pad": 0, "kind": "broadcast", "portable": true}, "seed": 23680}'))

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
