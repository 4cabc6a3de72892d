"""The worker process: runs examples one at a time for the parent, isolated from it.

Started as `python -m caiconform.runner.process [--health-hook module:function ...]`
(`runner.process`, which sets the process up and calls `serve`). It reads one request per line
on stdin and answers one line on what was stdout; fd 1 is then pointed at stderr, so whatever a
library prints cannot corrupt the protocol. The worker lives across
examples (and cells), so each library is imported and each CUDA context created once, not once
per example; imported check modules and adapters stay cached.

Requests (`op`):
- `run`: `{"execute": "module:function", "params", "producer", "consumer"}` -> `{"result",
  "duration_s", "health_s", "retire"}`. An exception escaping `execute` is classified here (`rejected`, or
  `skip` for `SkipExchange`); it never ends the worker. After the example the worker checks its
  health; if unfit, the result becomes `poisoned` and `retire` tells the parent to replace it.
  `retire` is also set, the result unchanged, when the family's `taints(params, result)` says
  the example left the process in a state nothing can check (e.g. a library that took a bogus
  stream handle handed the driver a pointer to no stream): what it ran next could not be
  trusted.
- `run_many`: `{"execute", "examples": [params, ...], "producer", "consumer"}`: the examples
  one after another, each answered as soon as it ended, as `run` would answer it, plus `"index"`
  (its place in `examples`) and `"more"` (whether another answer follows). The batch ends
  early at an answer that retires the process (`more` false), the rest not run: the parent
  hands them to the next process. Why: a lone `run` leaves the worker idle while its answer
  crosses to the parent, waits for the parent's GIL and is journaled, and the next request
  comes back, longer than many examples take (docs/performance.md, "Figures behind the
  code"); a batch lets the next example run meanwhile.
- `prepare`: `{"module", "producer", "consumer", "source"}`: import a check module and warm its
  libraries (the family's `prepare(producer, consumer)` when it has one, else the adapter
  source's `warm(name)`, or its `probe(name)` when it has none: each imports the library), so
  the first example of a cell is not charged for imports.
- `call`: `{"function", "kwargs"}` -> `{"value"}`: any JSON-returning function (library probes,
  environment capture), run here so the parent never imports a GPU library.
- `exit`.
A crash, a hang or an os._exit in `execute` is seen by the parent, not here.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import resource
import sys
import time
from collections.abc import Iterator
from typing import Any, BinaryIO

from caiconform.results.outcome import CRASH, POISONED, REJECTED, SKIP, Result
from caiconform.runner import health, ioctls
from caiconform.runner.protocol import decode, encode
from caiconform.runner.resolve import resolve

__all__ = ["serve", "run_example", "taints_of"]

_MESSAGE_LIMIT = 500


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MESSAGE_LIMIT else line[: _MESSAGE_LIMIT - 3] + "..."


def _describe(exc: BaseException) -> str:
    return _one_line(f"{type(exc).__name__}: {exc}")


def _is_skip(exc: BaseException) -> bool:
    try:
        from caiconform.adapters.base import SkipExchange
    except ImportError:
        return False
    return isinstance(exc, SkipExchange)


def _is_setup(exc: BaseException) -> bool:
    """A producer's factory failed to build the example (`adapters.base.ProducerFailed`)."""
    try:
        from caiconform.adapters.base import ProducerFailed
    except ImportError:
        return False
    return isinstance(exc, ProducerFailed)


def _missing_driver(exc: BaseException) -> str | None:
    """Why `exc` is a missing CUDA driver (a skip: nothing was judged), or None."""
    try:
        from caiconform.cuda.device import missing_driver
    except ImportError:
        return None
    return missing_driver(exc)


def _memory_kind(params: Any) -> contextlib.AbstractContextManager:
    """The example's memory kind (`params["memory"]`) made the one the reference producer and
    the adapters allocate (`caiconform.cuda.memkinds.using_kind`); no kind, no change."""
    kind = params.get("memory") if isinstance(params, dict) else None
    if not isinstance(kind, str):
        return contextlib.nullcontext()
    from caiconform.cuda.memkinds import using_kind

    return using_kind(kind)


def _as_result(value: Any) -> Result:
    if isinstance(value, Result):
        return value
    if isinstance(value, dict) and "outcome" in value:
        return Result.from_dict(value)
    return Result(
        REJECTED,
        message=f"check error: execute returned {type(value).__name__}, expected a Result",
    )


def run_example(
    execute: str, params: dict, producer: str | None, consumer: str | None
) -> tuple[Result, float]:
    """Run one example in this process and classify how it ended; returns (result, seconds).
    Also what the benchmarks time as the in-process baseline."""
    start = time.perf_counter()
    try:
        with _memory_kind(params):
            result = _as_result(resolve(execute)(params, producer, consumer))
    except SystemExit as exc:
        result = Result(CRASH, message=f"execute tried to exit the process: {_describe(exc)}")
    except Exception as exc:
        if _is_skip(exc):
            result = Result(SKIP, message=_one_line(str(exc)))
        elif _is_setup(exc):
            from caiconform.adapters.base import SETUP_PREFIX

            result = Result(SKIP, message=SETUP_PREFIX + _one_line(str(exc)))
        elif (no_driver := _missing_driver(exc)) is not None:
            result = Result(SKIP, message=_one_line(f"cannot run here: {no_driver}"))
        else:
            result = Result(REJECTED, message=_describe(exc))
    return result, time.perf_counter() - start


def _taints(execute: str, params: dict, result: Result) -> bool:
    """`taints_of` the family module of `execute`."""
    return taints_of(sys.modules.get(execute.partition(":")[0]), params, result)


def taints_of(module: Any, params: dict, result: Result) -> bool:
    """The family's `taints(params, result)`, False without one: whether the example left its
    process untrusted. Asked here, to retire the process, and by the runner's crash caps."""
    taints = getattr(module, "taints", None)
    if taints is None:
        return False
    try:
        return bool(taints(params, result))
    except Exception as exc:  # a bug in the family's predicate: replace the process to be safe
        print(f"taints: {_describe(exc)}", file=sys.stderr)
        return True


def _prepare(module: str, producer: str | None, consumer: str | None, source: str | None) -> None:
    family = importlib.import_module(module)
    prepare = getattr(family, "prepare", None)
    if prepare is not None:
        prepare(producer, consumer)
        return
    if source is None:
        return
    try:  # a source's `warm(name)` readies a library; one without it is probed instead
        ready = resolve(f"{source}:warm")
    except (ImportError, AttributeError, ValueError):
        ready = resolve(f"{source}:probe")
    for name in filter(None, dict.fromkeys((producer, consumer))):
        try:
            ready(name=name)
        except Exception as exc:  # the examples will meet and report the same problem
            print(f"prepare: library {name}: {_describe(exc)}", file=sys.stderr)


def _run_one(
    execute: str, params: dict, producer: str | None, consumer: str | None, hooks: list[str]
) -> dict[str, Any]:
    """One example and the health check after it: the answer to a `run` request."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    ioctls_before = ioctls.counters()
    result, duration = run_example(execute, params, producer, consumer)
    started = time.perf_counter()
    ok, why = health.check(hooks)
    health_s = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    ioctls_spent = ioctls.spent(ioctls_before, ioctls.counters())
    tainted = ok and _taints(execute, params, result)
    if not ok:
        result = Result(
            POISONED,
            rule=result.rule,
            message=_one_line(
                f"{why} (the example itself ended {result.outcome}: {result.message})"
            ),
            seen=result.seen,
            expected=result.expected,
        )
    return {
        "result": result.to_dict(),
        "duration_s": duration,
        "health_s": health_s,
        **_cpu_used(before, after),
        **ioctls_spent,
        "retire": not ok or tainted,
    }


def _cpu_used(before: resource.struct_rusage, after: resource.struct_rusage) -> dict[str, float]:
    """What the example and its health check cost the process's CPUs (every thread of it:
    a library's own threads, a driver spinning on a sync) and how often the kernel took a CPU
    away from it (involuntary context switches): with the wall time, whether an example was
    slow because it worked, waited, or queued for a CPU the host did not have."""
    return {
        "cpu_user_s": after.ru_utime - before.ru_utime,
        "cpu_system_s": after.ru_stime - before.ru_stime,
        "preempted": after.ru_nivcsw - before.ru_nivcsw,
    }


def _answers(request: dict[str, Any], hooks: list[str]) -> Iterator[dict[str, Any]]:
    """The answers to one request: one, or for `run_many` one per example run (see above)."""
    if request.get("op") != "run_many":
        yield _handle(request, hooks)
        return
    examples = request.get("examples") or []
    for index, params in enumerate(examples):
        answer = _run_one(
            request["execute"], params, request.get("producer"), request.get("consumer"), hooks
        )
        answer["index"] = index
        answer["more"] = index + 1 < len(examples) and not answer["retire"]
        yield answer
        if not answer["more"]:
            return


def _handle(request: dict[str, Any], hooks: list[str]) -> dict[str, Any]:
    op = request.get("op")
    if op == "run":
        return _run_one(
            request["execute"],
            request["params"],
            request.get("producer"),
            request.get("consumer"),
            hooks,
        )
    if op == "prepare":
        try:
            _prepare(
                request["module"],
                request.get("producer"),
                request.get("consumer"),
                request.get("source"),
            )
        except Exception as exc:
            return {"error": _describe(exc)}
        # what preparing made (a library's CUDA state, compiled kernels) lives as long as the
        # process: out of the collector's way, so the gc.collect() of the streams and lifetime
        # families scans only what examples made, not the tens of thousands of objects a
        # library's preparation leaves
        gc.freeze()
        return {}
    if op == "call":
        try:
            value = resolve(request["function"])(**request.get("kwargs", {}))
        except Exception as exc:
            return {"error": _describe(exc)}
        return {"value": value}
    return {"error": f"unknown op {op!r}"}


def serve(proto_in: BinaryIO, proto_out: BinaryIO, hooks: list[str]) -> None:
    """Answer requests, one line per answer, until `exit`, end of input, or a retiring example."""
    for line in proto_in:
        request = decode(line)
        if request.get("op") == "exit":
            break
        for answer in _answers(request, hooks):
            answer["id"] = request.get("id")
            try:
                data = encode(answer)
            except (TypeError, ValueError) as exc:  # e.g. a circular `seen`: report, do not die
                error = {"error": f"unencodable answer: {_describe(exc)}"}
                data = encode({**_batch_fields(answer), "id": answer["id"], **error})
            proto_out.write(data)
            proto_out.flush()
            if answer.get("retire"):
                return


def _batch_fields(answer: dict[str, Any]) -> dict[str, Any]:
    """What an answer says about the process and its batch (kept when it is replaced): its
    place in a `run_many` batch and whether the process retires after it."""
    return {k: answer[k] for k in ("index", "more", "retire") if k in answer}
