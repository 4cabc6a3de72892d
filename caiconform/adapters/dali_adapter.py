"""NVIDIA DALI as a CAI producer (a pipeline's GPU output as a `TensorGPU`) and consumer (the
object taken in the way `fn.external_source` takes a GPU sample: `TensorGPU(obj, layout,
device_id)`).

What DALI does, read in the nvidia-dali-cuda130 2.4.0 wheel (`nvidia/dali/tensors.pyi`,
`nvidia/dali/external_source.py`) and NVIDIA/DALI issue #5423:
- export: `TensorGPU.__cuda_array_interface__` (and `TensorListGPU.as_tensor()` gives a
  `TensorGPU` of a dense batch);
- import: `external_source` accepts "objects implementing `__cuda_array_interface__`"; a
  sample that has one becomes `TensorGPU(datum, layout or "", device_id)`
  (`external_source.py`, `_prep_data_for_feed_input`), the device taken as the current one
  ("`__cuda_array_interface__` doesn't provide any way to pass the information about the
  device"); issue #5423 reports that this constructor assumed `stream` is an integer, so a v3
  export with `stream: None` (PyCUDA's) failed.

The producer runs a one-operator pipeline (`fn.external_source(name="x", device="gpu")`,
batch size 1) fed the values, and hands out the output batch as one tensor with the batch
axis squeezed: C-contiguous arrays only, stream scenario `none`. The consumer builds the
`TensorGPU` and reads it back with `as_cpu()`.

The wheel is 198.7 MB: larger than what one call to the GPU machine may carry (64 MiB), so
this adapter has not run there (its row gives the reason).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._plain import PlainProducer
from caiconform.adapters._repro import Missing, Repro

__all__ = ["DaliAdapter", "SUPPORTED"]

#: DALI's element types: bool, the integers, float16/32/64 (no complex, no datetime)
SUPPORTED = frozenset(
    k for k in _staging.ALL_DTYPE_KEYS if k == "b1" or k[0] in "iu" or k in ("f2", "f4", "f8")
)


class DaliAdapter(PlainProducer):
    """DALI tensors on the first CUDA device."""

    name = "dali"
    module = "nvidia.dali"
    distribution = "nvidia-dali-cuda130"
    supported = SUPPORTED
    consume_is_library_call = True
    capabilities = frozenset({"produce", "consume"})
    repro: Repro = Missing(
        {
            role: "the reproducers write no DALI pipeline: no run has exercised this adapter "
            "(docs/adapters.md: the wheel is 198.7 MB)"
            for role in ("produce", "consume")
        }
    )

    def upload(self, values: np.ndarray) -> Any:
        from nvidia.dali import fn
        from nvidia.dali.pipeline import Pipeline

        pipe = Pipeline(batch_size=1, num_threads=1, device_id=0, prefetch_queue_depth=1)
        with pipe:
            pipe.set_outputs(fn.external_source(name="x", device="gpu"))
        pipe.build()
        pipe.feed_input("x", values[np.newaxis])
        (batch,) = pipe.run()
        tensor = batch.as_tensor()
        tensor.squeeze(0)
        return _Owned(tensor, pipe)

    def consume(self, obj: Any) -> np.ndarray:
        from nvidia.dali.tensors import TensorGPU

        tensor = TensorGPU(_staging.cai_only(obj), "", 0)
        return np.array(tensor.as_cpu())  # in the shape DALI read, not reshaped to the dict's

    def repro_consume(self) -> str:
        return (
            "import numpy as np\n"
            "from nvidia.dali.tensors import TensorGPU\n"
            "result = np.array(TensorGPU(obj, '', 0).as_cpu())\n"
        )


class _Owned:
    """A pipeline's output tensor with the pipeline that owns its memory kept alive."""

    __slots__ = ("tensor", "pipeline")

    def __init__(self, tensor: Any, pipeline: Any) -> None:
        self.tensor = tensor
        self.pipeline = pipeline

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.tensor.__cuda_array_interface__
