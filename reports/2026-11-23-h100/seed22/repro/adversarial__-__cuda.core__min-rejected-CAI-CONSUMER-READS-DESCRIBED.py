# caiconform reproducer: check adversarial, producer None, consumer cuda.core
# the run saw: rejected [CAI-CONSUMER-READS-DESCRIBED]: cuda.core fed odd-strides <f4: got ValueError: strides must be divisible by itemsize, expected the values read back [CAI-CONSUMER-READS-DESCRIBED]
"""adversarial: cuda.core fed a odd-strides export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "odd-strides", "typestr": "<f4", "layout": {"shape": [1, 1], "strides": [7, 5], "offset": 0, "pad": 0, "kind": "odd", "portable": true}, "seed": 176668}'))

print(obj.__cuda_array_interface__)

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print('accepted; read:', result)
