# caiconform reproducer: check adversarial, producer None, consumer numba-from-cai
# the run saw: rejected [CAI-DATA-DEVICE-ACCESSIBLE]: numba-from-cai fed host-pointer <c8: got CudaAPIError: [<CUresult.CUDA_ERROR_INVALID_VALUE: 1>] Call to cuMemcpyDtoH results in CUDA_ERROR_INVALID_VALUE, expected a clean rejection (an exception) [CAI-DATA-DEVICE-ACCESSIBLE]
"""adversarial: numba-from-cai fed a host-pointer export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "host-pointer", "typestr": "<c8", "layout": {"shape": [1, 1], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 0}'))

print(obj.__cuda_array_interface__)

from numba import cuda
result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj).copy_to_host()
result = getattr(result, 'values', result)

print('accepted; read:', result)
