# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-V2-STREAM-UNDEFINED]: jax fed a mutant breaking CAI-V2-STREAM-UNDEFINED: got JaxRuntimeError: UNIMPLEMENTED: Only arrays with trivial (compact) striding are supported; i.e., arrays whose striding represents a transposition of the underlying buffer but not broadcasting. Dime..., expected the values read back [CAI-V2-STREAM-UNDEFINED]
"""adversarial: jax fed a dict breaking CAI-V2-STREAM-UNDEFINED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2]}], ["typestr", "<c16"], ["data", {"$tuple": [14685868085248, false]}], ["version", 0], ["strides", {"$tuple": [0]}], ["stream", 2]]}')), 'CAI-V2-STREAM-UNDEFINED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
