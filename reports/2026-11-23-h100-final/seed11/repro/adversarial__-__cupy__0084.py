# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: crash: worker died (SIGSEGV): Fatal Python error: Segmentation fault
"""adversarial: cupy fed a stream-bogus export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "stream-bogus", "typestr": "|b1", "layout": {"shape": [1], "strides": [1], "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 2}'))

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
