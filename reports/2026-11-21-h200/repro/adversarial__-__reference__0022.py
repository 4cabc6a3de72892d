# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-STRIDES-INT]: reference fed a mutant breaking CAI-STRIDES-INT: got ConsumerRefused: strides[0]: got 1.0, expected an int [CAI-STRIDES-INT], expected a clean rejection (an exception) [CAI-STRIDES-INT]
"""adversarial: reference fed a dict breaking CAI-STRIDES-INT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [1]}], ["typestr", "|u1"], ["data", {"$tuple": [256, false]}], ["version", 1], ["strides", {"$tuple": [1.0]}]]}')), 'CAI-STRIDES-INT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
