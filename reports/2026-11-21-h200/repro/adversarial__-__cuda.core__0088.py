# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-DATA-DEVICE-ACCESSIBLE]: cuda.core fed host-pointer |b1: got CUDAError: CUDA_ERROR_INVALID_VALUE: This indicates that one or more of the parameters passed to the API call is not within an acceptable range of values., expected a clean rejection (an exception) [CAI-DATA-DEVICE-ACCESSIBLE]
"""adversarial: cuda.core fed a host-pointer export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "host-pointer", "typestr": "|b1", "layout": {"shape": [2, 2, 2, 2], "strides": [8, 4, 2, 1], "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 760}'))

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
