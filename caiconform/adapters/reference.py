"""The reference adapter: caiconform's own producer and consumer, the baseline of every pair.

It wraps `caiconform.reference.producer.ReferenceArray` (an object whose
`__cuda_array_interface__` is exactly what was asked for: any typestr, layout, version,
read-only flag, mask and stream scenario; its `__dlpack__` exports both capsule kinds with a
tracked deleter, `caiconform.reference.dlpack_producer`) and `caiconform.reference.consumer.consume`
(which validates the dict, checks the pointer and byte extent with the driver, synchronizes as the
`stream` entry requires, and only then reads); over DLPack, `caiconform.reference.dlpack_import`
reads capsules directly. Both are imported when first used.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import numpy as np

from caiconform.adapters._repro import Array, Repro, Snip
from caiconform.adapters.base import CAPABILITIES, Adapter, SkipExchange
from caiconform.cuda.memkinds import MEMORY_KINDS
from caiconform.spec.layout import Layout
from caiconform.spec.scenarios import LIBRARY_STREAM_SCENARIOS, STREAM_SCENARIOS

__all__ = ["ReferenceAdapter", "CAI_VERSIONS"]

#: versions of the interface the reference producer can export
CAI_VERSIONS = (0, 1, 2, 3)


class _ReferenceRepro(Repro):
    """The reference consumer as a reproducer writes it: `read_back`, the scripts' conforming
    consumer over the driver (it waits on the exported stream, then copies)."""

    missing = MappingProxyType(
        {
            "produce": "the scripts rebuild the reference producer's export as a literal dict "
            "over memory the driver uploads (`report.standalone.exchange.reference_export`), "
            "not by a call",
            "consume-dlpack": "the reference's DLPack import is caiconform's own code, and a "
            "script shows a library's defect: a reference consumer's group has none to show",
        }
    )

    def consume(self, array: Array | None) -> Snip | None:
        return Snip("result = read_back(obj.__cuda_array_interface__)")


class ReferenceAdapter(Adapter):
    """caiconform's reference producer and consumer."""

    name = "reference"
    module = "caiconform"
    #: all but multigpu, and dlpack-copy: its DLPack import reads a capsule, it is no
    #: from_dlpack with copy and device keywords
    capabilities = CAPABILITIES - {"multigpu", "dlpack-copy"}
    memory_kinds = MEMORY_KINDS
    repro: Repro = _ReferenceRepro()

    def version(self) -> str | None:
        import caiconform

        return caiconform.__version__

    def available(self) -> tuple[bool, str]:
        from caiconform.cuda.device import gpu_available

        return gpu_available()

    def produce(
        self,
        values: np.ndarray,
        layout: Layout,
        typestr: str,
        stream_scenario: str = "none",
        *,
        version: int = 3,
        readonly: bool = False,
        mask: np.ndarray | None = None,
    ) -> Any:
        """A ReferenceArray; beyond the protocol it takes the CAI `version` to export, the
        `readonly` flag and a host `mask` (same shape as `values`) to export as `mask`."""
        values = np.asarray(values)
        if stream_scenario not in STREAM_SCENARIOS:
            raise ValueError(
                f"unknown stream scenario {stream_scenario!r}; expected one of {STREAM_SCENARIOS}"
            )
        if version not in CAI_VERSIONS:
            raise ValueError(f"CAI version must be one of {CAI_VERSIONS}, got {version!r}")
        if values.shape != tuple(layout.shape):
            raise ValueError(
                f"values have shape {values.shape}, the layout has shape {tuple(layout.shape)}"
            )
        if mask is not None and np.shape(mask) != values.shape:
            raise ValueError(f"mask has shape {np.shape(mask)}, values have shape {values.shape}")
        if stream_scenario in LIBRARY_STREAM_SCENARIOS:
            raise SkipExchange(
                f"the reference producer has no library streams ({stream_scenario!r}); its own "
                f"pending work is always on non-blocking streams ('pending')"
            )
        from caiconform.reference.producer import ReferenceArray

        return ReferenceArray(
            values,
            layout,
            typestr,
            version=version,
            readonly=readonly,
            mask=mask,
            stream_scenario=stream_scenario,
        )

    def consume(self, obj: Any) -> np.ndarray:
        """The values the reference consumer read (its ConsumeResult, with the validator's
        warnings and the driver's pointer facts, is available from `consume_result`)."""
        return self.consume_result(obj).values

    def consume_result(self, obj: Any) -> Any:
        from caiconform.reference.consumer import consume

        return consume(obj, sync="host")

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        """The values the reference DLPack consumer read (`caiconform.reference.dlpack_import`:
        the capsule read directly, on the consumer's own stream, its deleter called once)."""
        return self.import_dlpack(obj).values

    def import_dlpack(self, obj: Any) -> Any:
        """The reference DLPack consumer's whole `DLPackImport` (values, parsed capsule, the
        stream passed, the calls made, the findings that did not stop the read)."""
        from caiconform.reference.dlpack_import import import_dlpack

        return import_dlpack(obj)

    def repro_produce(self) -> str:
        return (
            "from caiconform.reference.producer import ReferenceArray\n"
            "obj = ReferenceArray(values, layout, typestr)\n"
        )

    def repro_consume(self) -> str:
        return "from caiconform.reference.consumer import consume\nresult = consume(obj)\n"

    def repro_consume_dlpack(self) -> str:
        return (
            "from caiconform.reference.dlpack_import import import_dlpack\n"
            "result = import_dlpack(obj).values\n"
        )
