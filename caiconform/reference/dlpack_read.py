"""The elements a DLPack capsule describes, copied to host memory: the reference consumer's
read, which the DLPack checks use too.

`read_elements(capsule, dtype, stream)` reads host memory (kDLCPU) with
`caiconform.dlpack.elements.read_host`, and CUDA memory (kDLCUDA, kDLCUDAHost, kDLCUDAManaged)
with the reference CAI consumer (`caiconform.reference.consumer`) from the capsule's description
as a CAI dict: it checks every byte lies in one allocation before it reads. `stream` is the
dict's: the stream the producer ordered its work on, which the consumer's own stream waits on
through an event ("enqueue"); None when the producer ordered its work before the consumer's
own stream (passed to `__dlpack__`), so nothing is waited for.
"""

from __future__ import annotations

import math

import numpy as np

from caiconform.dlpack.capsule import Capsule
from caiconform.dlpack.elements import read_host
from caiconform.dlpack.header import kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged

__all__ = ["read_elements", "CUDA_DEVICE_TYPES"]

#: the device types whose memory the reference CAI consumer reads
CUDA_DEVICE_TYPES = (kDLCUDA, kDLCUDAHost, kDLCUDAManaged)


def read_elements(capsule: Capsule, dtype: np.dtype, stream: int | None = None) -> np.ndarray:
    """A host copy of the capsule's elements as `dtype` (whose itemsize the caller made the
    capsule's); the caller holds the tensor until it returns. ValueError for a device that is
    neither the host nor CUDA; the reference consumer's ConsumerRefused for CUDA memory it
    cannot read safely."""
    if math.prod(capsule.shape) == 0:
        return np.empty(capsule.shape, dtype)
    if capsule.device[0] == kDLCPU:
        return read_host(capsule, dtype)
    if capsule.device[0] not in CUDA_DEVICE_TYPES:
        raise ValueError(f"no reader for device type {capsule.device[0]}")
    from caiconform.reference.consumer import consume

    described = {
        "version": 3,
        "shape": tuple(capsule.shape),
        "typestr": dtype.str if dtype.kind != "V" else f"|V{dtype.itemsize}",
        "data": (capsule.pointer, capsule.readonly),
        "strides": capsule.byte_strides,
        "stream": stream,
    }
    return np.asarray(consume(described, sync="enqueue").values).view(dtype)
