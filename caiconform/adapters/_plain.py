"""A producer-only adapter for libraries that upload a C-contiguous host array and nothing more.

PyCUDA and Warp (neither installed on the machines this project runs on) share everything but
the upload call: the request check, the refusal of stream scenarios and of strided layouts,
and the GPU requirement. Subclasses set `name`, `module`, `supported` and implement `upload`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.spec.layout import Layout

__all__ = ["PlainProducer"]


class PlainProducer(Adapter):
    """Produces C-contiguous arrays at offset 0 with stream scenario 'none' only."""

    capabilities = frozenset({"produce"})
    #: dtype keys of `_staging` the library can hold
    supported: frozenset[str] = frozenset()

    def available(self) -> tuple[bool, str]:
        return _staging.on_gpu(super().available())

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        values, dtype = _staging.check_request(
            self.name, values, layout, typestr, stream_scenario, self.supported
        )
        if stream_scenario != "none":
            raise SkipExchange(f"the {self.name} adapter covers stream scenario 'none' only")
        if not _staging.is_plain_c(layout, dtype.itemsize):
            raise SkipExchange(
                f"the {self.name} adapter produces C-contiguous arrays at offset 0 only"
            )
        return self.upload(_staging.c_ordered(values))

    def upload(self, values: np.ndarray) -> Any:
        """The library's own device array holding `values`, its work finished."""
        raise NotImplementedError
