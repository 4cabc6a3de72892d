# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-DATA-TUPLE]: reference fed a mutant breaking CAI-DATA-TUPLE: got ConsumerRefused: data: got a list [140373055786496, False], expected a tuple [CAI-DATA-TUPLE], expected a clean rejection (an exception) [CAI-DATA-TUPLE]
"""adversarial: reference fed a dict breaking CAI-DATA-TUPLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|u1"], ["data", [1024, false]], ["version", 1], ["strides", {"$tuple": []}]]}')), 'CAI-DATA-TUPLE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
