# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-DATA-REQUIRED]: reference fed a mutant breaking CAI-DATA-REQUIRED: got ConsumerRefused: data: got no 'data' entry, expected (pointer, read-only) [CAI-DATA-REQUIRED], expected a clean rejection (an exception) [CAI-DATA-REQUIRED]
"""adversarial: reference fed a dict breaking CAI-DATA-REQUIRED; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["version", 3], ["stream", null]]}')), 'CAI-DATA-REQUIRED', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
