# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-SHAPE-REQUIRED]: reference fed a mutant breaking CAI-SHAPE-REQUIRED: got ConsumerRefused: shape: got no 'shape' entry, expected a tuple of int [CAI-SHAPE-REQUIRED], expected a clean rejection (an exception) [CAI-SHAPE-REQUIRED]
"""adversarial: reference fed a dict breaking CAI-SHAPE-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["typestr", "<f4"], ["data", {"$tuple": [214272, false]}], ["version", 0], ["strides", {"$tuple": []}]]}')), 'CAI-SHAPE-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
