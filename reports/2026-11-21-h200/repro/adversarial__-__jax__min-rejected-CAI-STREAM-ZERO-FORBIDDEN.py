# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-STREAM-ZERO-FORBIDDEN]: jax fed a mutant breaking CAI-STREAM-ZERO-FORBIDDEN: got JaxRuntimeError: INVALID_ARGUMENT: CUDA Array Interface does not allow zero stream value, expected a clean rejection (an exception) [CAI-STREAM-ZERO-FORBIDDEN]
"""adversarial: jax fed a dict breaking CAI-STREAM-ZERO-FORBIDDEN; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3], ["strides", {"$tuple": []}], ["stream", 0]]}')), 'CAI-STREAM-ZERO-FORBIDDEN', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
