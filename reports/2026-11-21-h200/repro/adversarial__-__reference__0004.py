# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-DATA-EXTENT-IN-ALLOCATION]: reference fed extent-past-allocation <f2: got ConsumerRefused: data[0]: got bytes [0x7fab26200400, 0x7fab27200420) end 16777216 bytes past allocation [0x7fab26200400, 0x7fab26200420), expected every byte reached inside one allocation [CAI-DATA..., expected a clean rejection (an exception) [CAI-DATA-EXTENT-IN-ALLOCATION]
"""adversarial: reference fed a extent-past-allocation export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "extent-past-allocation", "typestr": "<f2", "layout": {"shape": [2, 2, 4], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 2633865}'))

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
