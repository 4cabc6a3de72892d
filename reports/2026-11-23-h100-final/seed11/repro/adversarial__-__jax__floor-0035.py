# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: accepted-invalid [CAI-SHAPE-INT]: jax fed a mutant breaking CAI-SHAPE-INT: got accepted, read shape (1,), expected a clean rejection (an exception) [CAI-SHAPE-INT]
"""adversarial: jax fed a dict breaking CAI-SHAPE-INT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [true]}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3], ["strides", {"$tuple": [1]}]]}')), 'CAI-SHAPE-INT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
