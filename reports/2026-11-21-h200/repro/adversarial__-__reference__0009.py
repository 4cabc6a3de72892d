# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-VERSION-REQUIRED]: reference fed a mutant breaking CAI-VERSION-REQUIRED: got ConsumerRefused: version: got no 'version' entry, expected an int [CAI-VERSION-REQUIRED], expected a clean rejection (an exception) [CAI-VERSION-REQUIRED]
"""adversarial: reference fed a dict breaking CAI-VERSION-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}]]}')), 'CAI-VERSION-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
