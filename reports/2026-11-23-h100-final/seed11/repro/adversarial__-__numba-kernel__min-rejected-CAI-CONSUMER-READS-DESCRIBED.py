# caiconform reproducer: check adversarial, producer None, consumer numba-kernel
# the run saw: rejected [CAI-CONSUMER-READS-DESCRIBED]: numba-kernel fed negative-strides |b1: got AttributeError: 'Boolean' object has no attribute 'bitwidth', expected the values read back [CAI-CONSUMER-READS-DESCRIBED]
"""adversarial: numba-kernel fed a negative-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "negative-strides", "typestr": "|b1", "layout": {"shape": [1], "strides": [-1], "offset": 0, "pad": 0, "kind": "negative", "portable": true}, "seed": 0}'))

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
