# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-STRIDES-INT]: reference fed a mutant breaking CAI-STRIDES-INT: got ConsumerRefused: strides[0]: got '-2', expected an int [CAI-STRIDES-INT], expected a clean rejection (an exception) [CAI-STRIDES-INT]
"""adversarial: reference fed a dict breaking CAI-STRIDES-INT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [4]}], ["typestr", "<u2"], ["data", {"$tuple": [150022, false]}], ["version", 1], ["strides", {"$tuple": ["-2"]}], ["descr", [{"$tuple": ["", "<u2"]}]], ["mask", {"$cai": {"$dict": [["shape", {"$tuple": [4]}], ["typestr", "|b1"], ["data", {"$tuple": [43776, false]}], ["version", 1]]}}]]}')), 'CAI-STRIDES-INT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
