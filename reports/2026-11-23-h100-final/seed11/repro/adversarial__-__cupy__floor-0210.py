# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: poisoned [CAI-STRIDES-INT]: CUDA context unusable after the example: cuCtxSynchronize failed with CUDA_ERROR_MISALIGNED_ADDRESS (716) (the example itself ended rejected: cupy fed a mutant breaking CAI-STRIDES-INT: got CUDARuntimeError: cudaErrorMisalignedAddress: misaligned address, expected a clean rejection (an exception) [CAI-STRIDES-INT])
"""adversarial: cupy fed a dict breaking CAI-STRIDES-INT; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2]}], ["typestr", "<i2"], ["data", {"$tuple": [6822400, true]}], ["version", 1], ["strides", {"$tuple": [true]}]]}')), 'CAI-STRIDES-INT', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
