# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-PORT-STRIDES-ITEMSIZE]: cuda.core fed odd-strides <u2: got ValueError: strides must be divisible by itemsize, expected the values read back [CAI-PORT-STRIDES-ITEMSIZE]
"""adversarial: cuda.core fed a odd-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "odd-strides", "typestr": "<u2", "layout": {"shape": [1, 1, 4, 2], "strides": [25, 25, 6, 3], "offset": 0, "pad": 0, "kind": "odd", "portable": false}, "seed": 1}'))

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
