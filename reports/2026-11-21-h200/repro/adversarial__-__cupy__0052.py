# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: poisoned [CAI-PORT-STRIDES-ITEMSIZE]: CUDA context unusable after the example: cuCtxSynchronize failed with CUDA_ERROR_MISALIGNED_ADDRESS (716) (the example itself ended rejected: cupy fed odd-strides <c8: got CUDARuntimeError: cudaErrorMisalignedAddress: misaligned address, expected the values read back [CAI-PORT-STRIDES-ITEMSIZE])
"""adversarial: cupy fed a odd-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "odd-strides", "typestr": "<c8", "layout": {"shape": [4], "strides": [15], "offset": 0, "pad": 0, "kind": "odd", "portable": false}, "seed": 0}'))

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
