# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-SHAPE-REQUIRED]: jax fed a mutant breaking CAI-SHAPE-REQUIRED: got JaxRuntimeError: INVALID_ARGUMENT: CUDA Array Interface does not define `shape`, expected a clean rejection (an exception) [CAI-SHAPE-REQUIRED]
"""adversarial: jax fed a dict breaking CAI-SHAPE-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["typestr", "<u8"], ["data", {"$tuple": [76544, false]}], ["version", 3], ["strides", {"$tuple": [24]}], ["descr", [{"$tuple": ["", "<u8"]}]], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [1036032, false]}], ["version", 3]]}}]]}')), 'CAI-SHAPE-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
