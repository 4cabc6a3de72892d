# caiconform reproducer: check adversarial, producer None, consumer numba
# the run saw: accepted-invalid [CAI-STREAM-ZERO-FORBIDDEN]: numba fed a mutant breaking CAI-STREAM-ZERO-FORBIDDEN: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-STREAM-ZERO-FORBIDDEN]
"""adversarial: numba fed a dict breaking CAI-STREAM-ZERO-FORBIDDEN; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3], ["stream", 0]]}')), 'CAI-STREAM-ZERO-FORBIDDEN', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.as_cuda_array(obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
