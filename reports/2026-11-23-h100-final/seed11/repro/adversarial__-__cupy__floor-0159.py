# caiconform reproducer: check adversarial, producer None, consumer cupy
# the run saw: poisoned [CAI-DATA-NONZERO-SIZE-NONNULL]: CUDA context unusable after the example: cuCtxSynchronize failed with CUDA_ERROR_ILLEGAL_ADDRESS (700) (the example itself ended rejected: cupy fed a mutant breaking CAI-DATA-NONZERO-SIZE-NONNULL: got CUDARuntimeError: cudaErrorIllegalAddress: an illegal memory access was encountered, expected a clean rejection (an exception) [CAI-DATA-NONZERO-SIZE-NONNULL])
"""adversarial: cupy fed a dict breaking CAI-DATA-NONZERO-SIZE-NONNULL; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [4]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3], ["strides", {"$tuple": [0]}]]}')), 'CAI-DATA-NONZERO-SIZE-NONNULL', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print('accepted; read:', result)
