# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-STREAM-HANDLE]: reference fed a mutant breaking CAI-STREAM-HANDLE: got ConsumerRefused: stream: got 18446744073709551616, expected 1, 2 or a cudaStream_t handle 0 < stream < 2**64 [CAI-STREAM-HANDLE], expected a clean rejection (an exception) [CAI-STREAM-HANDLE]
"""adversarial: reference fed a dict breaking CAI-STREAM-HANDLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": []}], ["typestr", "|b1"], ["data", {"$tuple": [256, false]}], ["version", 3], ["mask", null], ["stream", 18446744073709551616]]}')), 'CAI-STREAM-HANDLE', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
