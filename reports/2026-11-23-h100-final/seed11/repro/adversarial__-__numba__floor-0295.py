# caiconform reproducer: check adversarial, producer None, consumer numba
# the run saw: accepted-invalid [CAI-V0-NO-MASK]: numba fed a mutant breaking CAI-V0-NO-MASK: got accepted, read shape (0,), expected a clean rejection (an exception) [CAI-V0-NO-MASK]
"""adversarial: numba fed a dict breaking CAI-V0-NO-MASK; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 0], ["mask", null]]}')), 'CAI-V0-NO-MASK', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.as_cuda_array(obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
