# caiconform reproducer: check adversarial, producer None, consumer jax
# the run saw: rejected [CAI-KEYS-UNKNOWN]: jax fed a mutant breaking CAI-KEYS-UNKNOWN: got KeyError: 'stream', expected the values read back [CAI-KEYS-UNKNOWN]
"""adversarial: jax fed a dict breaking CAI-KEYS-UNKNOWN; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "<i2"], ["data", {"$tuple": [98818048, true]}], ["version", 1], ["strides", {"$tuple": []}], ["descr", [{"$tuple": ["", "<i2"]}]], ["", -3379]]}')), 'CAI-KEYS-UNKNOWN', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np, jax.numpy as jnp
result = np.asarray(jnp.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
