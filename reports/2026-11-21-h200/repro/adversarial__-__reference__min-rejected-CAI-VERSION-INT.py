# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-VERSION-INT]: reference fed a mutant breaking CAI-VERSION-INT: got ConsumerRefused: version: got 1.0, expected an int [CAI-VERSION-INT], expected a clean rejection (an exception) [CAI-VERSION-INT]
"""adversarial: reference fed a dict breaking CAI-VERSION-INT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 1.0], ["strides", {"$tuple": []}]]}')), 'CAI-VERSION-INT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
