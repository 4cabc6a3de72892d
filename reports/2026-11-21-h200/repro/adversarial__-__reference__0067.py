# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-DATA-DEVICE-ACCESSIBLE]: reference fed host-pointer <f2: got ConsumerRefused: data[0]: got 0x2e5d3a30 is unregistered memory, expected device, managed or mapped pinned memory [CAI-DATA-DEVICE-ACCESSIBLE], expected a clean rejection (an exception) [CAI-DATA-DEVICE-ACCESSIBLE]
"""adversarial: reference fed a host-pointer export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "host-pointer", "typestr": "<f2", "layout": {"shape": [1, 2], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 4294967294}'))

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
