"""A producer's final write left pending on a stream, as a standalone script's lines make it:
the reference's (the driver's own copy after a host-side sleep on the stream) and a library's
(its own stream and copy), each with the sentinel an early read shows.
"""

from __future__ import annotations

from caiconform.adapters._repro import Snip
from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone import libraries as libs
from caiconform.report.standalone._text import Script

__all__ = ["SPIN_US", "pending_producer", "reference_pending"]

#: how long the producer's work stays pending (µs): long after a warmed consumer has read
SPIN_US = 500_000
_SENTINEL = """
final = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
n = final.size
image2 = np.concatenate([~final, final])  # the sentinel (each byte complemented), then the final bytes
sentinel = image2[:n].view(dtype).reshape(values.shape)
"""


def reference_pending(s: Script, array, scenario: str) -> None:
    """`obj`: the values behind a pending write on a stream of the scenario's kind, exported
    as a v3 dict naming that stream (the `unsynced` scenario: naming none)."""
    stream = {
        "legacy": "stream = 1  # the legacy default stream",
        "library-default": "stream = 1  # the legacy default stream",
        "per-thread": "stream = 2  # the per-thread default stream",
    }.get(
        scenario,
        "stream = int(ck(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value)))",
    )
    exported = "None" if scenario == "unsynced" else "stream"
    s.add(_SENTINEL)
    s.add(
        f"""
        ptr = upload(image2)
        ck(cu.cuCtxSynchronize())
        {stream}
        sleep_on(stream, {SPIN_US})  # the producer's work, still running ...
        ck(cu.cuMemcpyDtoDAsync(ptr, ptr + n, n, cu.CUstream(stream)))  # ... then its final write
        obj = Exported({ex.interface(array, "ptr", stream=exported)})
        """
    )


def pending_producer(s: Script, producer: str, scenario: str, array) -> bool:
    """`obj`: `producer`'s own array whose final write is pending on the library's stream of
    `scenario` (the adapters' staging, in the library's own calls); False where unknown."""
    how = libs.pending(producer, scenario, array)
    if isinstance(how, Snip):  # the library's own lines making `obj`, its work still running
        s.imp(*how.imports)
        s.add(_SENTINEL)
        s.add(how.code)
        return True
    if how is None or array.size == 0:
        return False
    s.imp(*how.imports)
    s.add(_SENTINEL)
    s.add(how.upload_src)
    s.add(
        f"""
        stream = {how.stream_src}
        sleep_on({how.handle_src}, {SPIN_US})  # the producer's work, still running ...
        """
    )
    s.add(how.copy_src + "  # ... then its final write")
    s.add(how.view_src)
    if how.under:
        s.add(
            f"with {how.under}:  # handed on inside the stream's block, as user code does\n"
            "    obj = Exported(array.__cuda_array_interface__, owner=array)"
        )
    else:
        s.add("obj = Exported(array.__cuda_array_interface__, owner=array)")
    return True
