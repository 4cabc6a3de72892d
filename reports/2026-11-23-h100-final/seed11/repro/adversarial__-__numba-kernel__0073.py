# caiconform reproducer: check adversarial, producer None, consumer numba-kernel
# the run saw: accepted-invalid [CAI-DATA-EXTENT-IN-ALLOCATION]: numba-kernel fed extent-past-allocation <u4: got accepted, read shape (1048580,), expected a clean rejection (an exception) [CAI-DATA-EXTENT-IN-ALLOCATION]
"""adversarial: numba-kernel fed a extent-past-allocation export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "extent-past-allocation", "typestr": "<u4", "layout": {"shape": [4], "strides": [4], "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 4}'))

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
