# caiconform reproducer: check adversarial, producer None, consumer cuda.cccl
# the run saw: rejected [CAI-KEYS-UNKNOWN]: cuda.cccl fed a mutant breaking CAI-KEYS-UNKNOWN: got TypeError: OpKind.IDENTITY is not supported for struct or other opaque types (complex256). Provide a custom operator instead., expected the values read back [CAI-KEYS-UNKNOWN]
"""adversarial: cuda.cccl fed a dict breaking CAI-KEYS-UNKNOWN; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [4]}], ["typestr", "<c32"], ["data", {"$tuple": [685010725376, false]}], ["version", 0], ["strides", {"$tuple": [32]}], ["(k\\ud971\\udc57\\udaaf\\udf99\\udbab\\udc52\\u008ay\\u00e0", null]]}')), 'CAI-KEYS-UNKNOWN', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import numpy as np
import cupy
from cuda.compute import OpKind, unary_transform
d = obj.__cuda_array_interface__
n = int(np.prod(d['shape']))
out = cupy.empty(n, dtype=d['typestr'])
unary_transform(d_in=obj, d_out=out, op=OpKind.IDENTITY, num_items=n)
result = out.get().reshape(d['shape'])  # C order; an F-order input differs
result = getattr(result, 'values', result)

print('accepted; read:', result)
