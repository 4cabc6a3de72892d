# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: poisoned [CAI-TYPESTR-STR]: CUDA context unusable after the example: cuCtxSynchronize failed with CUDA_ERROR_MISALIGNED_ADDRESS (716) (the example itself ended rejected: cupy fed a mutant breaking CAI-TYPESTR-STR: got CUDARuntimeError: cudaErrorMisalignedAddress: misaligned address, expected a clean rejection (an exception) [CAI-TYPESTR-STR])
"""adversarial: cupy fed a dict breaking CAI-TYPESTR-STR; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [1, 1, 4, 4]}], ["typestr", null], ["data", {"$tuple": [9868032, true]}], ["version", 0], ["strides", {"$tuple": [32, 0, 8, 2]}]]}')), 'CAI-TYPESTR-STR', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
