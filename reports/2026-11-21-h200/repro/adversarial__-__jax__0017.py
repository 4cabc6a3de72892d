# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-DATA-EXTENT-IN-ALLOCATION]: jax fed extent-past-allocation <c32: got JaxRuntimeError: INVALID_ARGUMENT: Unknown NumPy dtype dtype('complex256') char G kind c itemsize 32, expected a clean rejection (an exception) [CAI-DATA-EXTENT-IN-ALLOCATION]
"""adversarial: jax fed a extent-past-allocation export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "extent-past-allocation", "typestr": "<c32", "layout": {"shape": [3, 3], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 4050200}'))

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
