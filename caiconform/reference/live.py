"""Live checks: what only the driver can tell about an exported array.

The static validator judges the dict; `live_check` asks the device whether the pointer is
device-accessible, whether every byte the layout reaches lies in one allocation, whether the
stream is one a consumer can synchronize on, and whether the data can actually be read, by
running the reference consumer on the object. `caiconform check` calls it; on a machine
without a GPU it says why it did nothing instead of failing.
"""

from __future__ import annotations

from typing import Any

from caiconform.spec.findings import Finding

__all__ = ["live_check", "LIVE_CHECKSUM_OVER"]

#: Arrays with at least this many elements are verified with the on-device checksum instead of
#: being copied to the host.
LIVE_CHECKSUM_OVER = 1 << 22


def live_check(obj: Any) -> tuple[list[Finding], str | None]:
    """Run the reference consumer on `obj`: (findings, None) when the checks ran, or
    ([], why) when they could not (no GPU, an invalid dict, a driver failure).

    Findings carry rule IDs (CAI-DATA-DEVICE-ACCESSIBLE, CAI-DATA-EXTENT-IN-ALLOCATION,
    CAI-STREAM-LIVE, ...). Static MUST findings are left to the validator: an invalid dict is
    not handed to the driver at all.
    """
    from caiconform.cuda import context_healthy, gpu_available

    ok, why = gpu_available()
    if not ok:
        return [], f"live checks skipped: {why}"
    from caiconform.cuda.errors import CUDAError
    from caiconform.reference.consumer import ConsumerRefused, consume, inspect_dict

    try:
        d = obj if type(obj) is dict else obj.__cuda_array_interface__
        inspect_dict(d)
    except ConsumerRefused:
        return [], "live checks skipped: the dict breaks MUST rules (see the static findings)"
    except Exception as exc:
        return [], f"live checks skipped: reading __cuda_array_interface__ raised {exc!r}"
    try:
        consume(obj, sync="host", checksum_over=LIVE_CHECKSUM_OVER)
    except ConsumerRefused as refused:
        return refused.findings, None
    except CUDAError as exc:
        return [], f"live checks stopped by a driver error: {exc}"
    healthy, why = context_healthy()
    if not healthy:
        return [], f"live checks left the CUDA context unusable: {why}"
    return [], None
