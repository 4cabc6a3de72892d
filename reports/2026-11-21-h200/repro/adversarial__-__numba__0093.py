# caiconform reproducer: check adversarial, producer None, consumer numba
# the run saw: rejected [CAI-DATA-EXTENT-IN-ALLOCATION]: numba fed extent-past-allocation |b1: got CudaAPIError: [<CUresult.CUDA_ERROR_INVALID_VALUE: 1>] Call to cuMemcpyDtoH results in CUDA_ERROR_INVALID_VALUE, expected a clean rejection (an exception) [CAI-DATA-EXTENT-IN-ALLOCATION]
"""adversarial: numba fed a extent-past-allocation export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "extent-past-allocation", "typestr": "|b1", "layout": {"shape": [4, 4, 1, 4], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 2309}'))

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.as_cuda_array(obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
