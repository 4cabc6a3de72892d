"""A DLPack exchange through `__dlpack__` against one through the type's C exchange API table,
per library, in one run.

DLPack 1.3's `__dlpack_c_exchange_api__` exists because a `__dlpack__` call costs a Python
method call, a capsule and its destructor; the table hands a C consumer the tensor through one
function pointer. Both exchanges are timed here the way a consumer makes them, each ending with
the tensor released:
- `__dlpack__`: `obj.__dlpack__(stream=<no sync>, max_version=(1, 3))`, the capsule renamed
  "used_dltensor_versioned" (the consumer takes the tensor), its deleter called;
- table: `managed_tensor_from_py_object_no_sync(obj, &out)`, then the tensor's deleter.
Both go through ctypes from Python (the table's function bound once, as a consumer caches a
type's table: `caiconform.checks._capi_calls.from_object_function`; PyCapsule calls of
`caiconform.dlpack.capsule`), so each carries a few ctypes calls a C consumer would not make;
`ctypes call` is one such call alone (a no-op C function through the same kind of binding), the
floor both stand on. The ratio is the `__dlpack__` exchange's time over the table's, in the same
run. Libraries: torch (`torch.Tensor`, on the GPU when there is one), cuda.core (a
StridedMemoryView over a host numpy array, or over a torch CUDA tensor), and the reference
producer's table on a host array type (its own functions are Python callbacks: the cost of a
table written in Python, not a fast path). A library missing here is a skipped row.

    python benchmarks/bench_dlpack_capi.py [--rounds N] [--number N] [--json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import platform
import sys
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

from caiconform.checks import _capi_calls
from caiconform.dlpack.capsule import capi, capsule_pointer, stream_for
from caiconform.dlpack.exchange_api import read_exchange_api
from caiconform.dlpack.header import USED_VERSIONED, VERSIONED
from caiconform.reference.dlpack_export import call_deleter

_set_name = capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_noop = capi("Py_IsInitialized", ctypes.c_int)


def _release(address: int) -> None:
    """The consumer done with the tensor at `address`: its deleter, once."""
    call_deleter(address, True)


def dlpack_exchange(obj: Any) -> None:
    """One consumer's exchange through `__dlpack__`: the capsule taken over and released."""
    capsule = obj.__dlpack__(stream=stream_for(obj), max_version=(1, 3))
    address = capsule_pointer(capsule, VERSIONED)
    _set_name(capsule, USED_VERSIONED)
    _release(address)


def table_exchange(entry: int) -> Callable[[Any], None]:
    """One consumer's exchange through the table's `managed_tensor_from_py_object_no_sync`,
    the function bound once (a consumer caches a type's table)."""
    function = _capi_calls.from_object_function(entry)
    out = _capi_calls.VERSIONED_P()

    def exchange(obj: Any) -> None:
        function(id(obj), ctypes.byref(out))
        _release(ctypes.cast(out, ctypes.c_void_p).value)

    return exchange


def _host_type() -> Any:
    """A numpy array behind `__dlpack__`, its type carrying the reference producer's table."""
    from caiconform.reference.dlpack_capi import exchange_table

    class HostArray:
        def __init__(self, values: np.ndarray) -> None:
            self.values = values

        def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
            return self.values.__dlpack__(stream=stream, max_version=max_version)

        def __dlpack_device__(self):
            return self.values.__dlpack_device__()

    HostArray.__dlpack_c_exchange_api__ = exchange_table(lambda address: None)
    return HostArray(np.arange(1024, dtype=np.float32))


def _torch() -> Any:
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.arange(1024, dtype=torch.float32, device=device)


def _cuda_core() -> Any:
    from cuda.core.utils import StridedMemoryView

    try:
        import torch

        if torch.cuda.is_available():
            return StridedMemoryView.from_dlpack(_torch(), stream_ptr=-1)
    except ImportError:
        pass
    return StridedMemoryView.from_dlpack(np.arange(1024, dtype=np.float32), stream_ptr=-1)


#: library -> a zero-argument maker of one of its objects whose type carries a table
LIBRARIES: dict[str, Callable[[], Any]] = {
    "torch": _torch,
    "cuda.core": _cuda_core,
    "reference (Python table)": _host_type,
}


def best(function: Callable[[Any], None], obj: Any, number: int, rounds: int) -> float:
    """Seconds per call, the best of `rounds` rounds of `number` calls."""
    return min(timeit.repeat(lambda: function(obj), number=number, repeat=rounds)) / number


def measure(name: str, make: Callable[[], Any], number: int, rounds: int) -> dict:
    try:
        obj = make()
        table = read_exchange_api(obj)
    except Exception as exc:  # noqa: BLE001 - a library missing or without a table: a skipped row
        return {"library": name, "skipped": f"{type(exc).__name__}: {exc}"}
    through_table = table_exchange(table.entries["managed_tensor_from_py_object_no_sync"])
    dlpack_exchange(obj), through_table(obj)  # warm both paths once
    dl_s = best(dlpack_exchange, obj, number, rounds)
    table_s = best(through_table, obj, number, rounds)
    return {
        "library": name,
        "object": f"{type(obj).__module__}.{type(obj).__qualname__}",
        "table_version": list(table.version),
        "dlpack_us": dl_s * 1e6,
        "table_us": table_s * 1e6,
        "ratio": dl_s / table_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    floor_s = min(timeit.repeat(_noop, number=args.number, repeat=args.rounds)) / args.number
    rows = [measure(name, make, args.number, args.rounds) for name, make in LIBRARIES.items()]
    if args.json:
        print(
            json.dumps(
                {
                    "python": platform.python_version(),
                    "ctypes_call_us": floor_s * 1e6,
                    "rows": rows,
                },
                indent=2,
            )
        )
        return 0
    print(f"python {platform.python_version()}; ctypes call {floor_s * 1e6:.3f} us")
    print(f"{'library':28} {'__dlpack__ us':>14} {'table us':>10} {'ratio':>7}")
    for row in rows:
        if "skipped" in row:
            print(f"{row['library']:28} skipped: {row['skipped'][:60]}")
            continue
        print(
            f"{row['library']:28} {row['dlpack_us']:14.3f} {row['table_us']:10.3f} "
            f"{row['ratio']:7.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
