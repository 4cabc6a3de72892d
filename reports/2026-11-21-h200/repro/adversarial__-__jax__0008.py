# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-SHAPE-TUPLE]: jax fed a mutant breaking CAI-SHAPE-TUPLE: got JaxRuntimeError: UNIMPLEMENTED: Only arrays with trivial (compact) striding are supported; i.e., arrays whose striding represents a transposition of the underlying buffer but not broadcasting. Dime..., expected a clean rejection (an exception) [CAI-SHAPE-TUPLE]
"""adversarial: jax fed a dict breaking CAI-SHAPE-TUPLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", [3, 2, 2, 1]], ["typestr", "<f4"], ["data", {"$tuple": [286976, false]}], ["version", 2], ["strides", {"$tuple": [4, 0, 0, 0]}], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": [1, 1]}], ["typestr", "|b1"], ["data", {"$tuple": [8057982892032, false]}], ["version", 2]]}}]]}')), 'CAI-SHAPE-TUPLE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
