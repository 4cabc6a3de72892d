# caiconform reproducer: check adversarial, producer None, consumer numba
# the run saw: rejected [CAI-KEYS-UNKNOWN]: numba fed a mutant breaking CAI-KEYS-UNKNOWN: got NotImplementedError: Masked arrays are not supported, expected the values read back [CAI-KEYS-UNKNOWN]
"""adversarial: numba fed a dict breaking CAI-KEYS-UNKNOWN; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2]}], ["typestr", "<i2"], ["data", {"$tuple": [719104, false]}], ["version", 2], ["strides", {"$tuple": [2]}], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": [2]}], ["typestr", "|b1"], ["data", {"$tuple": [308224, false]}], ["version", 2]]}}], ["", 5783]]}')), 'CAI-KEYS-UNKNOWN', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.as_cuda_array(obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
