# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-TYPESTR-REQUIRED]: jax fed a mutant breaking CAI-TYPESTR-REQUIRED: got JaxRuntimeError: INVALID_ARGUMENT: CUDA Array Interface does not define `typestr`, expected a clean rejection (an exception) [CAI-TYPESTR-REQUIRED]
"""adversarial: jax fed a dict breaking CAI-TYPESTR-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["data", {"$tuple": [256, false]}], ["version", 0], ["strides", {"$tuple": []}]]}')), 'CAI-TYPESTR-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
