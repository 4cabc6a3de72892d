# caiconform reproducer: check adversarial, producer None, consumer numba-kernel
# the run saw: crash: worker died (SIGSEGV): Fatal Python error: Segmentation fault
"""adversarial: numba-kernel fed a stream-bogus export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "stream-bogus", "typestr": "|b1", "layout": {"shape": [1], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

from numba import cuda
@cuda.jit
def copy1(src, dst):
    i = cuda.grid(1)
    if i < src.shape[0]:
        dst[i] = src[i]
dst = cuda.device_array(obj.__cuda_array_interface__['shape'], obj.__cuda_array_interface__['typestr'])
copy1[(dst.size + 127) // 128, 128](obj, dst)
result = dst.copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
