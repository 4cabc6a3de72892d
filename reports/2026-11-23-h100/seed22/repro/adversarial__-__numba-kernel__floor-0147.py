# caiconform reproducer: check adversarial, producer None, consumer numba-kernel
# the run saw: poisoned [CAI-DATA-EXTENT-IN-ALLOCATION]: CUDA context unusable after the example: cuCtxSynchronize failed with CUDA_ERROR_ILLEGAL_ADDRESS (700) (the example itself ended rejected: numba-kernel fed extent-past-allocation <f4: got CudaAPIError: [<CUresult.CUDA_ERROR_ILLEGAL_ADDRESS: 700>] Call to cuMemcpyDtoH results in CUDA_ERROR_ILLEGAL_ADDRESS, expected a clean rejection (an exception) [CAI-DATA-EXTENT-IN-ALLOCATION])
"""adversarial: numba-kernel fed a extent-past-allocation export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "extent-past-allocation", "typestr": "<f4", "layout": {"shape": [3, 4], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 0}'))

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
