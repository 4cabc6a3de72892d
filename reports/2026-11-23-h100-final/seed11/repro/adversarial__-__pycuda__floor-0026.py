# caiconform reproducer: check adversarial, producer None, consumer pycuda
# the run saw: poisoned [CAI-SHAPE-TUPLE]: CUDA context unusable after the example: cuCtxSynchronize failed with CUDA_ERROR_ILLEGAL_ADDRESS (700) (the example itself ended rejected: pycuda fed a mutant breaking CAI-SHAPE-TUPLE: got LogicError: cuCtxSynchronize failed: an illegal memory access was encountered, expected a clean rejection (an exception) [CAI-SHAPE-TUPLE])
"""adversarial: pycuda fed a dict breaking CAI-SHAPE-TUPLE; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", "3"], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3]]}')), 'CAI-SHAPE-TUPLE', keep)
obj = InterfaceObject(d, keepalive=keep)

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
