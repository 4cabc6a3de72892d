# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-STREAM-ZERO-FORBIDDEN]: reference fed a mutant breaking CAI-STREAM-ZERO-FORBIDDEN: got ConsumerRefused: stream: got 0, expected None, 1, 2 or a handle [CAI-STREAM-ZERO-FORBIDDEN], expected a clean rejection (an exception) [CAI-STREAM-ZERO-FORBIDDEN]
"""adversarial: reference fed a dict breaking CAI-STREAM-ZERO-FORBIDDEN; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3], ["mask", null], ["stream", 0]]}')), 'CAI-STREAM-ZERO-FORBIDDEN', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
