# caiconform reproducer: check adversarial, producer None, consumer reference
# the run saw: rejected [CAI-STREAM-LIVE]: reference fed stream-bogus |b1: got ConsumerRefused: stream: got 0x7f00dead0000 is not readable host memory, so it is no cudaStream_t, expected a live stream: 1, 2 or a cudaStream_t [CAI-STREAM-LIVE], expected a clean rejection (an exception) [CAI-STREAM-LIVE]
"""adversarial: reference fed a stream-bogus export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "stream-bogus", "typestr": "|b1", "layout": {"shape": [1], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 49}'))

print(obj.__cuda_array_interface__)

from caiconform.reference.consumer import consume
result = consume(obj)
result = getattr(result, 'values', result)

print('accepted; read:', result)
