"""A synthetic check family whose producer name chooses how an example misbehaves.

Each "library" misbehaves only from `n >= THRESHOLD[name]` on, so shrinking has a known minimum
to find (the threshold itself). `good` always passes; `wrong` returns a wrong value (a `fail`
finding); `raises` raises ValueError; `abort`, `segfault`, `exit`, `kill` take the worker process down;
`linger` dies of SIGSEGV while a process of its own holds its pipes for LINGER_S (as a driver
tearing down a dead process's CUDA contexts holds up its end); `hang` sleeps forever; `poison`
leaves a flag the health hook reads, as a sticky CUDA error would;
`skip` raises SkipExchange; `refuses` returns a correct rejection (`rejected`, expected a
clean rejection); `pid` passes and reports the worker's pid (to see replacement);
`flaky` fails an `n` only the first time it meets it in a run (markers in the directory
FLAKY_ENV names; without it, every time), as a nondeterministic GPU result would.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from caiconform.adapters.base import SkipExchange
from caiconform.results.outcome import FAIL, PASS, REJECTED, Result
from caiconform.results.record import EXPECT_REJECTION

if TYPE_CHECKING:  # workers import the family to run examples; only the parent draws them
    from hypothesis import strategies as st

FAMILY = "synthetic"
#: one cell per library keeps the tests quick; `plan_cells` is tested for "pair" separately
ROLES = "producer"
#: True so that cells with the synthetic `gpu-only` library are skipped without a GPU; the
#: other synthetic libraries declare `needs_gpu = False`, so their cells run anywhere
NEEDS_GPU = True

THRESHOLD = {
    "good": 10**9,
    "pid": 10**9,
    "wrong": 100,
    "raises": 300,
    "abort": 500,
    "segfault": 500,
    "linger": 500,
    "exit": 500,
    "kill": 500,
    "hang": 900,
    "poison": 700,
    "skip": 0,
    "flaky": 400,
    "refuses": 200,
}
#: how long a `linger` example's own process outlives it, holding its pipes
LINGER_S = 4.0
#: a directory where `flaky` marks the `n`s it failed once
FLAKY_ENV = "CAICONFORM_TEST_FLAKY_DIR"

#: set by a `poison` example, read by `healthy()`; a fresh worker process starts clean
_poisoned = False


def examples(producer: str, consumer: str | None) -> st.SearchStrategy[dict]:
    """`n` in [0, 1000]; shrinks towards 0, so a shrunk failure lands on the threshold."""
    from hypothesis import strategies as st

    return st.fixed_dictionaries({"n": st.integers(0, 1000)})


def execute(params: dict, producer: str, consumer: str | None) -> Result:
    global _poisoned
    n = params["n"]
    producer = producer.removeprefix("slow-")  # "slow-X": X, with a slow import (adapters.py)
    if n < THRESHOLD[producer]:
        return Result(PASS, seen=os.getpid() if producer == "pid" else None)
    if producer == "wrong":
        return Result(
            FAIL,
            rule="CAI-DATA-EXTENT-IN-ALLOCATION",
            message=f"value {n + 1} read back, expected {n} [CAI-DATA-EXTENT-IN-ALLOCATION]",
            seen=n + 1,
            expected=n,
        )
    if producer == "raises":
        raise ValueError(f"cannot take n={n}")
    if producer == "refuses":  # invalid input refused cleanly: the right answer, no finding
        return Result(
            REJECTED,
            rule="CAI-SHAPE-INT",
            message=f"n={n} refused [CAI-SHAPE-INT]",
            expected=EXPECT_REJECTION,
        )
    if producer == "abort":
        os.abort()
    if producer == "segfault":
        ctypes.string_at(0)
    if producer == "linger":
        if os.fork() == 0:  # out of the worker's process group: a kill of it misses this one
            os.setsid()
            time.sleep(LINGER_S)
            os._exit(0)
        ctypes.string_at(0)
    if producer == "exit":
        os._exit(3)
    if producer == "kill":  # as the OOM killer would
        os.kill(os.getpid(), signal.SIGKILL)
    if producer == "hang":
        while True:
            time.sleep(60)
    if producer == "poison":
        _poisoned = True
        return Result(PASS)
    if producer == "skip":
        raise SkipExchange("synthetic library has no such capability")
    if producer == "flaky":
        marks = os.environ.get(FLAKY_ENV)
        if marks:
            mark = Path(marks) / str(n)
            if mark.exists():
                return Result(PASS)
            mark.touch()
        return Result(
            FAIL,
            rule="CAI-CONSUMER-READS-DESCRIBED",
            message=f"zeros read for n={n} [CAI-CONSUMER-READS-DESCRIBED]",
        )
    raise AssertionError(f"unknown synthetic library {producer!r}")


def taints(params: dict, result: Result) -> bool:
    """The family's taint predicate (`worker._taints`): an example with `taint` set leaves its
    process untrusted, whatever its outcome."""
    return bool(params.get("taint"))


def healthy() -> tuple[bool, str]:
    """Health hook: unhealthy once a `poison` example ran in this process."""
    return (not _poisoned, "synthetic sticky error left by the last example")


def repro(params: dict, producer: str, consumer: str | None) -> str:
    return (
        "from tests.synthetic.checks import execute\n"
        f"print(execute({params!r}, {producer!r}, {consumer!r}))\n"
    )


#: seconds each `nap` example takes
NAP_S = 0.3


def nap(params: dict, producer: str, consumer: str | None) -> Result:
    """An example that takes NAP_S seconds and passes (to time batches of examples)."""
    time.sleep(NAP_S)
    return Result(PASS, seen=params["n"])


def not_a_result(params: dict, producer: str, consumer: str) -> int:
    """An `execute` with a bug: returns something that is not a Result."""
    return 42


def uses_cuda_bindings(params: dict, producer: str, consumer: str) -> Result:
    """Loads cuda.bindings and makes device 0's primary context current (GPU tests), or makes
    an illegal memory access on the GPU when `params["illegal"]`, leaving a sticky error."""
    from caiconform.cuda import ensure_context, synchronize

    ensure_context(0)
    if params.get("illegal"):
        from caiconform.cuda import kernels

        kernels.fill(8, 16, (1024,), (4,), 4)  # writes through a near-null device pointer
        synchronize()
    return Result(PASS)


def queues(params: dict, producer: str, consumer: str | None) -> Result:
    """The hardware queues this worker's CUDA contexts would be made with (the driver reads
    `CUDA_DEVICE_MAX_CONNECTIONS` at cuInit), and its pid (`runner.forkserver.queues_for`)."""
    return Result(PASS, seen=[os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS"), os.getpid()])


def factory_fails(params: dict, producer: str, consumer: str | None) -> Result:
    """An example whose producer factory raises (a user's factory that cannot make a dtype)."""
    from caiconform.adapters.base import ProducerFailed

    raise ProducerFailed(f"producer {producer} could not build the example: ValueError: no cast")
