# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-SHAPE-NONNEGATIVE]: reference fed a mutant breaking CAI-SHAPE-NONNEGATIVE: got ConsumerRefused: shape[0]: got -1, expected an int >= 0 [CAI-SHAPE-NONNEGATIVE], expected a clean rejection (an exception) [CAI-SHAPE-NONNEGATIVE]
"""adversarial: reference fed a dict breaking CAI-SHAPE-NONNEGATIVE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [-1]}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3], ["mask", null], ["stream", null]]}')), 'CAI-SHAPE-NONNEGATIVE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
