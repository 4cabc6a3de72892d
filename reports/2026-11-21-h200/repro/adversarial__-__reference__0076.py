# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-DESCR-GRAMMAR]: reference fed a mutant breaking CAI-DESCR-GRAMMAR: got ConsumerRefused: descr: got '|b1', expected a descr (descr: a descr is a list of field tuples, got str) [CAI-DESCR-GRAMMAR], expected a clean rejection (an exception) [CAI-DESCR-GRAMMAR]
"""adversarial: reference fed a dict breaking CAI-DESCR-GRAMMAR; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 1], ["descr", "|b1"]]}')), 'CAI-DESCR-GRAMMAR', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
