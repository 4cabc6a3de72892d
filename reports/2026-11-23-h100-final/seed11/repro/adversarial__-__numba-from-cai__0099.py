# caiconform reproducer: check adversarial, producer None, consumer numba-from-cai
# the run saw: crash: worker died (SIGSEGV): Fatal Python error: Segmentation fault
"""adversarial: numba-from-cai fed a stream-bogus export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "stream-bogus", "typestr": "|i1", "layout": {"shape": [1], "strides": [1], "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 3}'))

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
