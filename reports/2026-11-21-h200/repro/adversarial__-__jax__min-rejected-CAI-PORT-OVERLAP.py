# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-PORT-OVERLAP]: jax fed broadcast |b1: got JaxRuntimeError: UNIMPLEMENTED: Only arrays with trivial (compact) striding are supported; i.e., arrays whose striding represents a transposition of the underlying buffer but not broadcasting. Dime..., expected the values read back [CAI-PORT-OVERLAP]
"""adversarial: jax fed a broadcast export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "broadcast", "typestr": "|b1", "layout": {"shape": [2], "strides": [0], "offset": 0, "pad": 0, "kind": "broadcast", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
