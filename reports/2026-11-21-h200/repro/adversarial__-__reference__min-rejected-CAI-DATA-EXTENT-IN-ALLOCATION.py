# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-DATA-EXTENT-IN-ALLOCATION]: reference fed extent-past-allocation |b1: got ConsumerRefused: data[0]: got bytes [0x7fab26200000, 0x7fab26300001) end 1048576 bytes past allocation [0x7fab26200000, 0x7fab26200001), expected every byte reached inside one allocation [CAI-DATA-..., expected a clean rejection (an exception) [CAI-DATA-EXTENT-IN-ALLOCATION]
"""adversarial: reference fed a extent-past-allocation export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "extent-past-allocation", "typestr": "|b1", "layout": {"shape": [1], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
