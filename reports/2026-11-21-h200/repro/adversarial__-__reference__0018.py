# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-DATA-READONLY-BOOL]: reference fed a mutant breaking CAI-DATA-READONLY-BOOL: got ConsumerRefused: data[1]: got 0, expected a bool [CAI-DATA-READONLY-BOOL], expected a clean rejection (an exception) [CAI-DATA-READONLY-BOOL]
"""adversarial: reference fed a dict breaking CAI-DATA-READONLY-BOOL; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "<f2"], ["data", {"$tuple": [256, 0]}], ["version", 0], ["strides", {"$tuple": []}]]}')), 'CAI-DATA-READONLY-BOOL', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
