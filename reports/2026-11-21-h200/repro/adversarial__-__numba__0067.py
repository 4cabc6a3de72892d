# caiconform reproducer: check adversarial, producer None, consumer numba
# the run saw: rejected [CAI-DATA-DEVICE-ACCESSIBLE]: numba fed host-pointer <u8: got CudaAPIError: [<CUresult.CUDA_ERROR_INVALID_VALUE: 1>] Call to cuMemcpyDtoH results in CUDA_ERROR_INVALID_VALUE, expected a clean rejection (an exception) [CAI-DATA-DEVICE-ACCESSIBLE]
"""adversarial: numba fed a host-pointer export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "host-pointer", "typestr": "<u8", "layout": {"shape": [1, 2, 4, 1], "strides": [64, 32, 8, 8], "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 1}'))

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.as_cuda_array(obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
