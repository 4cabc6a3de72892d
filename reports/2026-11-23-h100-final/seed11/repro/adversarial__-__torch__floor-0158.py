# caiconform reproducer: check adversarial, producer None, consumer torch
# the run saw: poisoned [CAI-DATA-NONZERO-SIZE-NONNULL]: CUDA context unusable after the example: cuCtxSynchronize failed with CUDA_ERROR_ILLEGAL_ADDRESS (700) (the example itself ended rejected: torch fed a mutant breaking CAI-DATA-NONZERO-SIZE-NONNULL: got AcceleratorError: CUDA error: an illegal memory access was encountered Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more infor..., expected a clean rejection (an exception) [CAI-DATA-NONZERO-SIZE-NONNULL])
"""adversarial: torch fed a dict breaking CAI-DATA-NONZERO-SIZE-NONNULL; it should refuse it

Run with: python this_file.py
"""

import json

from caiconform.checks._support import InterfaceObject, decode
from caiconform.checks.adversarial import rebase

keep = []
d = rebase(decode(json.loads('{"$dict": [["shape", {"$tuple": [2, 3]}], ["typestr", "|b1"], ["data", {"$tuple": [0, false]}], ["version", 3], ["strides", {"$tuple": [0, 1]}]]}')), 'CAI-DATA-NONZERO-SIZE-NONNULL', keep)
obj = InterfaceObject(d, keepalive=keep)

print(obj.__cuda_array_interface__)

import torch
result = torch.as_tensor(obj, device='cuda').cpu().numpy()
result = getattr(result, 'values', result)

print('accepted; read:', result)
