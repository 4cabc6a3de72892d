# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-STREAM-LIVE]: jax fed stream-bogus <i4: got JaxRuntimeError: NOT_FOUND: GetStreamFromExternalStream failed to find stream. Only GPU streams used for dlpack imports are supported., expected a clean rejection (an exception) [CAI-STREAM-LIVE]
"""adversarial: jax fed a stream-bogus export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "stream-bogus", "typestr": "<i4", "layout": {"shape": [2, 2, 2, 2], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
