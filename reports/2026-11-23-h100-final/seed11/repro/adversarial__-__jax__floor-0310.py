# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-V2-STREAM-UNDEFINED]: jax fed a mutant breaking CAI-V2-STREAM-UNDEFINED: got JaxRuntimeError: NOT_FOUND: GetStreamFromExternalStream failed to find stream. Only GPU streams used for dlpack imports are supported., expected the values read back [CAI-V2-STREAM-UNDEFINED]
"""adversarial: jax fed a dict breaking CAI-V2-STREAM-UNDEFINED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "<u2"], ["data", {"$tuple": [54025443635200, false]}], ["version", 0], ["strides", {"$tuple": []}], ["stream", 32512]]}')), 'CAI-V2-STREAM-UNDEFINED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
