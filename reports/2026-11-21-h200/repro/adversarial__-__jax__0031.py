# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-TYPESTR-STR]: jax fed a mutant breaking CAI-TYPESTR-STR: got JaxRuntimeError: UNIMPLEMENTED: Only arrays with trivial (compact) striding are supported; i.e., arrays whose striding represents a transposition of the underlying buffer but not broadcasting. Dime..., expected a clean rejection (an exception) [CAI-TYPESTR-STR]
"""adversarial: jax fed a dict breaking CAI-TYPESTR-STR; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [1, 4]}], ["typestr", null], ["data", {"$tuple": [2560000022, false]}], ["version", 3], ["strides", {"$tuple": [54, 4]}], ["descr", [{"$tuple": ["", "<u2"]}]], ["mask", null], ["stream", 2]]}')), 'CAI-TYPESTR-STR', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
