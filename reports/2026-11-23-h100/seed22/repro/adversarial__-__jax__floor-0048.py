# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: accepted-invalid [CAI-DATA-TUPLE]: jax fed a mutant breaking CAI-DATA-TUPLE: got accepted, read shape (3, 2, 2), expected a clean rejection (an exception) [CAI-DATA-TUPLE]
"""adversarial: jax fed a dict breaking CAI-DATA-TUPLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [3, 2, 2]}], ["typestr", "|u1"], ["data", {"$tuple": [250741760, true, 0]}], ["version", 3], ["stream", 2]]}')), 'CAI-DATA-TUPLE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
