# caiconform reproducer: check adversarial, producer None, consumer pycuda
# the run saw: accepted-invalid [CAI-DATA-EXTENT-IN-ALLOCATION]: pycuda fed extent-past-allocation <i4: got accepted, read shape (1048579,), expected a clean rejection (an exception) [CAI-DATA-EXTENT-IN-ALLOCATION]
"""adversarial: pycuda fed a extent-past-allocation export

Run with: python this_file.py
"""

import json

from caiconform.checks.adversarial import build_live

obj, values, keep = build_live(json.loads('{"kind": "live", "mutation": "extent-past-allocation", "typestr": "<i4", "layout": {"shape": [3], "strides": [4], "offset": 0, "pad": 0, "kind": "C", "portable": true}, "seed": 3}'))

print(obj.__cuda_array_interface__)

import numpy as np
import pycuda.autoprimaryctx
from pycuda import gpuarray
from pycuda.compiler import SourceModule
from caiconform.adapters.pycuda_adapter import GATHER_SOURCE, c_strides_of
d = obj.__cuda_array_interface__
shape, dtype = tuple(d['shape']), np.dtype(d['typestr'])
strides = d.get('strides') or c_strides_of(shape, dtype.itemsize)
n = int(np.prod(shape))
dst = gpuarray.empty(n * dtype.itemsize, np.uint8)
meta = gpuarray.to_gpu(np.array([*shape, *strides, 0], dtype=np.int64))
SourceModule(GATHER_SOURCE).get_function('gather')(obj, dst, np.int64(n), np.int32(len(shape)), np.int32(dtype.itemsize), meta, block=(256, 1, 1), grid=(max(1, -(-n // 256)), 1))
result = dst.get().view(dtype).reshape(shape)
result = getattr(result, 'values', result)

print('accepted; read:', result)
