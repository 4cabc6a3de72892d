# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-DATA-REQUIRED]: jax fed a mutant breaking CAI-DATA-REQUIRED: got KeyError: 'data', expected a clean rejection (an exception) [CAI-DATA-REQUIRED]
"""adversarial: jax fed a dict breaking CAI-DATA-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|u1"], ["version", 1], ["strides", {"$tuple": []}]]}')), 'CAI-DATA-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
