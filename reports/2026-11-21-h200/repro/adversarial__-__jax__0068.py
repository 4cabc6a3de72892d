# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-DATA-NONZERO-SIZE-NONNULL]: jax fed a mutant breaking CAI-DATA-NONZERO-SIZE-NONNULL: got JaxRuntimeError: INVALID_ARGUMENT: CUDA Array Interface `data`(=NULL) and `shape`(no zero-valued dimensions) are inconsistent, expected a clean rejection (an exception) [CAI-DATA-NONZERO-SIZE-NONNULL]
"""adversarial: jax fed a dict breaking CAI-DATA-NONZERO-SIZE-NONNULL; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3], ["mask", null]]}')), 'CAI-DATA-NONZERO-SIZE-NONNULL', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
