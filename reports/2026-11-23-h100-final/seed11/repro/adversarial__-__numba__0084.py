# caiconform reproducer: check adversarial, producer None, consumer numba
# the run saw: crash: worker died (SIGSEGV): Fatal Python error: Segmentation fault
"""adversarial: numba fed a stream-bogus export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "stream-bogus", "typestr": "|b1", "layout": {"shape": [1], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.as_cuda_array(obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
