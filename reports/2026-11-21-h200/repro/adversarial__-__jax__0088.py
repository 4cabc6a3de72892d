# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-PORT-STRIDES-ITEMSIZE]: jax fed odd-strides <i4: got JaxRuntimeError: UNIMPLEMENTED: Only arrays with trivial (compact) striding are supported; i.e., arrays whose striding represents a transposition of the underlying buffer but not broadcasting. Dime..., expected the values read back [CAI-PORT-STRIDES-ITEMSIZE]
"""adversarial: jax fed a odd-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "odd-strides", "typestr": "<i4", "layout": {"shape": [3], "strides": [5], "offset": 0, "pad": 0, "kind": "odd", "portable": false}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
