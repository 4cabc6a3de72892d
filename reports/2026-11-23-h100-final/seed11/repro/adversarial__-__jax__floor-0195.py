# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: accepted-invalid [CAI-STRIDES-TYPE]: jax fed a mutant breaking CAI-STRIDES-TYPE: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-STRIDES-TYPE]
"""adversarial: jax fed a dict breaking CAI-STRIDES-TYPE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3], ["strides", 4]]}')), 'CAI-STRIDES-TYPE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
