# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: rejected [CAI-KEYS-UNKNOWN]: cupy fed a mutant breaking CAI-KEYS-UNKNOWN: got RuntimeError: UnownedMemory requires explicit device ID for a null pointer., expected the values read back [CAI-KEYS-UNKNOWN]
"""adversarial: cupy fed a dict breaking CAI-KEYS-UNKNOWN; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2, 0, 2, 1]}], ["typestr", "|b1"], ["data", {"$tuple": [0, true]}], ["version", 1], ["strides", {"$tuple": [12, 9, 3, 1]}], ["mask", null], ["device", -18073]]}')), 'CAI-KEYS-UNKNOWN', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
