# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: accepted-invalid [CAI-MASK-SHAPE]: jax fed a mutant breaking CAI-MASK-SHAPE: got accepted, read shape (), expected a clean rejection (an exception) [CAI-MASK-SHAPE]
"""adversarial: jax fed a dict breaking CAI-MASK-SHAPE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": [2]}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3]]}}]]}')), 'CAI-MASK-SHAPE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
