"""The parent's side of the workers: start them, send examples, notice crashes and hangs,
replace them.

A `Worker` is one slot: it (re)starts its process on demand, so after a crash, a hang or a
poisoned context the next example simply gets a fresh process. Its requests and answers, and
how a crash or a hang is told from them, are its base class's (`transport.Transport`).

Workers run in their own session, so a Ctrl-C in the terminal reaches only the parent, which
then stops them; `worker.py` makes them die with the parent when it is killed.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caiconform.results.outcome import REJECTED, Result
from caiconform.runner.forkserver import PRELOAD_ENV
from caiconform.runner.process import PARENT_ENV, PATH_ENV
from caiconform.runner.protocol import decode, encode
from caiconform.runner.transport import Transport, WorkerLost, reap
from caiconform.runner.zygote import Zygote, ZygoteProcess

__all__ = [
    "Exchange",
    "Worker",
    "WorkerPool",
    "WorkerChoice",
    "DEFAULT_ENV",
    "HOST_WORKERS",
    "WORKERS_PER_GPU",
    "choose_workers",
    "cores_available",
    "default_workers",
    "forks_here",
    "slot_gpus",
]

#: set in every worker unless the caller's environment already sets them: several workers share
#: one GPU, so JAX must not grab most of its memory up front
DEFAULT_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}

#: how long a worker may take to import a check module and warm its adapters
PREPARE_TIMEOUT_S = 300.0

#: worker slots a default run gives each GPU it uses (`default_workers`): what one GPU takes,
#: not what the host's cores allow: more workers on one GPU make the run slower, not faster
#: (docs/performance.md, the workers per GPU)
WORKERS_PER_GPU = 8

#: worker slots a default run has on a host with GPUs, however many GPUs it has: the workers'
#: examples are slowed by one another host-wide, not per GPU (the NVIDIA driver's ioctls slow
#: with every worker on the host, whatever GPU it uses), so more slots only make more of them
#: wait (docs/performance.md)
HOST_WORKERS = 8

#: what a worker's answer measured of its example, copied into the exchange's `timing`
TIMING_KEYS = ("cpu_user_s", "cpu_system_s", "preempted", "ioctl_s", "nv_ioctl_s", "nv_ioctl_n")


def forks_here() -> bool:
    """Whether workers may be fork servers here (Linux: `os.fork` after imports, pidfds)."""
    return sys.platform.startswith("linux")


def cores_available() -> int:
    """The cores this process may run on (`os.sched_getaffinity`; `os.cpu_count` elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def default_workers(gpus: int = 0, cores: int | None = None) -> int:
    """The worker slots of a run that does not say (`--workers`): without a GPU, one per core;
    with `gpus` GPUs, WORKERS_PER_GPU per GPU and HOST_WORKERS in all, no more than the cores
    (the run's own process and its drawing processes need some too: the parent uses about half
    a core) and at least one per GPU, so every GPU gets cells."""
    cores = cores_available() if cores is None else cores
    if gpus <= 0:
        return max(1, cores)
    return max(1, gpus, min(cores, WORKERS_PER_GPU * gpus, HOST_WORKERS))


def slot_gpus(count: int, gpu_ids: Sequence[str]) -> list[str | None]:
    """The GPU each of `count` slots is pinned to (`CUDA_VISIBLE_DEVICES`): slot i gets
    `gpu_ids[i % len(gpu_ids)]`, so every GPU has its own slots (and their fork servers) and
    their numbers differ by one at most; None for every slot without a GPU.

    One GPU is pinned too: unpinned, the slots of `--gpus 1` on a host with two saw both, and
    libraries that open every visible device (JAX's client) would make contexts on a GPU the
    run is not to use."""
    if not gpu_ids:
        return [None] * count
    return [gpu_ids[slot % len(gpu_ids)] for slot in range(count)]


@dataclass(frozen=True)
class WorkerChoice:
    """How many worker slots a run has, how they are spread over its GPUs, and why (run.json
    `workers`)."""

    count: int
    #: GPU id -> slots pinned to it ({} without a GPU)
    per_gpu: dict[str, int]
    cores: int
    #: how the count was chosen: "--workers" or the default's rule with its numbers
    chosen: str

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "workers_per_gpu": dict(self.per_gpu),
            "cores": self.cores,
            "chosen": self.chosen,
        }


def choose_workers(
    requested: int | None, gpu_ids: Sequence[str], cores: int | None = None
) -> WorkerChoice:
    """The run's worker slots: `requested` (`--workers`, at least 1) when given, else
    `default_workers` for the GPUs in `gpu_ids`."""
    cores = cores_available() if cores is None else cores
    gpus = len(gpu_ids)
    if requested is not None:
        count, chosen = max(1, requested), "--workers"
    else:
        count = default_workers(gpus, cores)
        if gpus:
            chosen = (
                f"default: min({cores} cores, {WORKERS_PER_GPU} per GPU x {gpus} GPU(s), "
                f"{HOST_WORKERS} per host), at least one per GPU"
            )
        else:
            chosen = f"default: one per core ({cores}), no GPU"
    pins = slot_gpus(count, gpu_ids)
    per_gpu: dict[str, int] = {}
    for gpu in pins:
        if gpu is not None:
            per_gpu[gpu] = per_gpu.get(gpu, 0) + 1
    return WorkerChoice(count, per_gpu, cores, chosen)


@dataclass
class Exchange:
    """One example as the parent saw it: the result, how long `execute` ran (the worker's own
    measure; wall time for a crash or hang), which worker process ran it, and where the
    parent's time went (`timing`, seconds): `execute_s` (the worker's `execute`), `health_s`
    (its after-example health check), `transfer_s` (the rest of the request's round trip:
    pipes, JSON, scheduling), `replace_s` (waiting for a replacement process: a spare to
    finish preparing, or a cold start), `prepare_s` (importing the cell's module and
    libraries in this process), `lost_s` (a crash or hang, from the request to its
    detection); and what the example and its health check cost the worker's CPUs
    (`cpu_user_s`, `cpu_system_s`, every thread of the process) and how many times the kernel
    preempted it (`preempted`); with the ioctl clock preloaded (`runner.ioctls`), the time
    its ioctls took (`ioctl_s`, `nv_ioctl_s` and `nv_ioctl_n` on the NVIDIA driver's files).
    Only the phases that took place are present."""

    result: Result
    duration_s: float
    worker: str | None
    timing: dict[str, float] = field(default_factory=dict)


#: (check module, producer, consumer, adapter source) a worker has been prepared for
_PrepareKey = tuple[str, str | None, str | None, str | None]


def _prepare_fields(key: _PrepareKey) -> dict[str, str | None]:
    module, producer, consumer, source = key
    return {"module": module, "producer": producer, "consumer": consumer, "source": source}


def _answered(
    answer: dict[str, Any], started: float, label: str, timing: dict[str, float], roundtrip: float
) -> Exchange:
    """The exchange of an example its worker answered: its result (REJECTED when the runner
    could not run it), and `execute_s`, `health_s`, `transfer_s` (the rest of the `roundtrip`)
    and what the worker measured (TIMING_KEYS)."""
    if "error" in answer:
        return Exchange(
            Result(REJECTED, message=f"runner: {answer['error']}"),
            time.monotonic() - started,
            label,
            timing,
        )
    execute_s = float(answer["duration_s"])
    health_s = float(answer.get("health_s", 0.0))
    timing.update(
        execute_s=execute_s,
        health_s=health_s,
        transfer_s=max(0.0, roundtrip - execute_s - health_s),
    )
    timing.update({k: answer[k] for k in TIMING_KEYS if k in answer})
    return Exchange(Result.from_dict(answer["result"]), execute_s, label, timing)


def _lost(
    lost: WorkerLost, started: float, clock: float, label: str, timing: dict[str, float]
) -> Exchange:
    """The exchange of an example whose process was lost (crash or hang): its outcome, and
    `lost_s` from `clock` (the request) to now."""
    timing["lost_s"] = time.perf_counter() - clock
    return Exchange(
        Result(lost.outcome, message=lost.message), time.monotonic() - started, label, timing
    )


class Worker(Transport):
    """One persistent worker slot: its process started, replaced and prepared here, its
    requests and their answers `Transport`'s.

    Parameters
    ----------
    slot: a small integer naming the slot in records (`w<slot>/<pid>`).
    env: variables set in the worker on top of the parent's environment (CUDA_VISIBLE_DEVICES).
    health_hooks: "module:function" health checks run after every example (see `health.py`).
    log_path: where the worker's stderr goes (appended); a temporary file when None.
    spare: keep a second process started and prepared (same check module, same libraries
        imported) while the first works, so replacing a crashed, hung or poisoned worker costs
        a swap instead of a cold start with every library imported again.
    fork: start a fork server (`forkserver.py`) instead: it imports the libraries once and
        forks the processes that run examples, keeping a prepared forked spare, so even
        back-to-back crashes (shrinking a crash) cost a fork each, not a cold import; `spare`
        is then not needed. Linux only (elsewhere the flag is ignored).
    """

    def __init__(
        self,
        slot: int = 0,
        *,
        env: Mapping[str, str] | None = None,
        health_hooks: Sequence[str] = (),
        log_path: Path | None = None,
        spare: bool = False,
        fork: bool = False,
    ) -> None:
        super().__init__(fork and forks_here())
        self.slot = slot
        self.env = dict(env or {})
        self.health_hooks = tuple(health_hooks)
        self.log_path = log_path
        self.spare = spare
        self.starts = 0
        self._prepared: set[_PrepareKey] = set()
        self._spare: subprocess.Popen | ZygoteProcess | None = None
        self._spare_prepared: set[_PrepareKey] = set()
        self._spare_pending: set[int] = set()  # ids of requests the spare has not answered
        #: fork mode: the run's zygote, which forks this slot's fork server (`runner.zygote`);
        #: a cold start when there is none or it cannot be asked
        self.zygote: Zygote | None = None

    # -- process life ----------------------------------------------------------------------
    @property
    def label(self) -> str:
        pid = self._proc.pid if self._proc is not None else "-"
        if self.fork and self._child is not None:
            pid = self._child
        return f"w{self.slot}/{pid}"

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        for key, value in DEFAULT_ENV.items():
            env.setdefault(key, value)
        env.update(self.env)
        env[PATH_ENV] = os.pathsep.join(p for p in sys.path if p)
        env[PARENT_ENV] = str(os.getpid())
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def _spawn(self) -> subprocess.Popen | ZygoteProcess:
        if self._log is None:
            if self.log_path is not None:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                self._log = open(self.log_path, "a+b")  # noqa: SIM115 -- lives as long as the slot
            else:
                self._log = tempfile.TemporaryFile()  # noqa: SIM115
        args = [arg for hook in self.health_hooks for arg in ("--health-hook", hook)]
        if self.fork:
            args.append("--fork")
        self.starts += 1
        if self.fork and self.zygote is not None and self.zygote.alive:
            with contextlib.suppress(OSError):
                return self.zygote.spawn(args, self._environment(), self._log.fileno())
        return subprocess.Popen(
            [sys.executable, "-m", "caiconform.runner.process", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=self._environment(),
            start_new_session=True,
        )

    def start(self) -> None:
        """Make sure a process is running: the current one, else the spare (once it has
        finished preparing), else a new one. Then start the next spare."""
        if self.alive:
            return
        self._discard()
        if self.fork:
            self._start_fork_server()
            return
        if not self._promote_spare():
            self._proc = self._spawn()
            self._buffer = b""
            self._prepared.clear()
        if self.spare:
            self._spare = self._spawn()
            self._spare_prepared = set()
            self._spare_pending = set()
            for key in self._prepared:
                self._prepare_spare(key)

    def _start_fork_server(self) -> None:
        """Start the fork server and read its first line (the pid of its first child). A server
        that dies before that line died importing what it was to preload (`PRELOAD_ENV`: a
        library whose import kills the process, before the probes have ruled it out): it is
        started once more without preloading, so that each cell imports its own libraries and
        only that library's cells meet the death, as failures of their own, not whichever
        example came first."""
        for preload in (True, False):
            saved = None if preload else self.env.pop(PRELOAD_ENV, None)
            try:
                self._proc = self._spawn()
            finally:
                if saved is not None:
                    self.env[PRELOAD_ENV] = saved
            self._buffer = b""
            self._prepared.clear()
            try:
                hello = decode(self._read_answer(time.monotonic() + PREPARE_TIMEOUT_S))
                self._child = hello.get("child")
                return
            except EOFError:
                self._child = None
                if not (preload and PRELOAD_ENV in self.env):
                    return  # the first request finds it dead and reports how
                self._discard()
            except (TimeoutError, OSError, ValueError):
                self._child = None  # the first request finds it dead and reports how
                return

    def _promote_spare(self) -> bool:
        """Make the spare the current process once it has answered what it was sent; False
        (and the spare discarded) when it has none or it died or hung while preparing."""
        spare, self._spare = self._spare, None
        if spare is None or spare.poll() is not None:
            reap(spare)
            return False
        self._proc, self._buffer = spare, b""
        deadline = time.monotonic() + PREPARE_TIMEOUT_S
        try:
            while self._spare_pending:
                self._spare_pending.discard(decode(self._read_answer(deadline)).get("id"))
        except (TimeoutError, EOFError, OSError, ValueError):
            self._discard()
            return False
        self._prepared = self._spare_prepared
        return True

    def _prepare_spare(self, key: _PrepareKey) -> None:
        """Send a prepare request to the spare without waiting for its answer."""
        if self._spare is None or key in self._spare_prepared:
            return
        self._next_id += 1
        try:
            self._spare.stdin.write(
                encode({"op": "prepare", **_prepare_fields(key), "id": self._next_id})
            )
            self._spare.stdin.flush()
        except (OSError, ValueError):  # died: start() will find out and cold-start instead
            return
        self._spare_prepared.add(key)
        self._spare_pending.add(self._next_id)

    def stop(self) -> None:
        """Ask the process to exit (killing it if it does not within a second) and reap it."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.write(encode({"op": "exit"}))
                proc.stdin.flush()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)
        self._discard()

    def close(self) -> None:
        """Stop the process and its spare, and close the stderr log."""
        self.stop()
        spare, self._spare = self._spare, None
        reap(spare)
        if self._log is not None:
            self._log.close()
            self._log = None

    def prepare(
        self, module: str, producer: str | None, consumer: str | None, source: str | None = None
    ) -> None:
        """Import a check module and warm its libraries (through the adapter source `source`)
        once per worker process."""
        key = (module, producer, consumer, source)
        if self.alive and key in self._prepared:
            return
        self.request({"op": "prepare", **_prepare_fields(key)}, timeout=PREPARE_TIMEOUT_S)
        self._prepared.add(key)
        self._prepare_spare(key)

    def run(
        self,
        execute: str,
        params: dict,
        producer: str | None,
        consumer: str | None,
        *,
        timeout: float,
        module: str | None = None,
        source: str | None = None,
    ) -> Exchange:
        """Run one example; never raises for anything the example does. A crash, hang or
        poisoned context becomes the outcome, and the worker is replaced for the next one."""
        batch = self.run_many(
            execute, [params], producer, consumer, timeout=timeout, module=module, source=source
        )
        return next(iter(batch))

    def run_many(
        self,
        execute: str,
        examples: Sequence[dict],
        producer: str | None,
        consumer: str | None,
        *,
        timeout: float,
        module: str | None = None,
        source: str | None = None,
    ) -> Iterator[Exchange]:
        """Run `examples` one after another in one request (`run_many`; a lone example is a
        `run`), yielding each one's Exchange as its answer arrives, so the worker runs the next
        while the caller journals this one. Each example has `timeout` seconds from the
        answer before it. Never raises for anything an example does; stops after an example
        that crashed, hung, poisoned or retired its process: the examples after it were not
        run, and the caller runs them elsewhere (the next request gets a fresh process)."""
        if not examples:
            return
        started = time.monotonic()
        timing: dict[str, float] = {}
        clock = time.perf_counter()
        if not self.alive:
            self.start()
            timing["replace_s"] = time.perf_counter() - clock
        label = self.label
        try:
            if module is not None:
                clock = time.perf_counter()
                self._prepare_for((module, producer, consumer, source), timing)
                label = self.label
            clock = time.perf_counter()
            fields = {"execute": execute, "producer": producer, "consumer": consumer}
            if len(examples) == 1:
                request_id, offset = self._send({"op": "run", "params": examples[0], **fields})
            else:
                request_id, offset = self._send(
                    {"op": "run_many", "examples": list(examples), **fields}
                )
        except WorkerLost as lost:
            yield _lost(lost, started, clock, label, timing)
            return
        for _ in examples:
            try:
                answer = self._receive(request_id, time.monotonic() + timeout, timeout, offset)
            except WorkerLost as lost:
                yield _lost(lost, started, clock, label, timing)
                return
            roundtrip = time.perf_counter() - clock
            if answer.get("retire") and not self.fork:  # a fork server replaces its child
                self.stop()
            yield _answered(answer, started, label, timing, roundtrip)
            if not answer.get("more") or answer.get("retire"):
                return
            # the next example's own measures: from this answer on. The log offset stays the
            # request's: the worker may have begun the next example, and a crash's death note,
            # before this answer was read (a batch ends at its one crash)
            started, clock, timing = time.monotonic(), time.perf_counter(), {}
            label = self.label

    def _prepare_for(self, key: _PrepareKey, timing: dict[str, float]) -> None:
        """Ready the process for `key` (`prepare`) unless it is (`timing` gets `prepare_s`),
        and replace it when that left it dead (`replace_s`). A WorkerLost says it was lost
        importing the module."""
        module, producer, consumer, source = key
        if key not in self._prepared:
            clock = time.perf_counter()
            try:
                self.prepare(module, producer, consumer, source)
            except WorkerLost as lost:
                lost.message = f"while importing {module} and its libraries: {lost.message}"
                raise
            timing["prepare_s"] = time.perf_counter() - clock
        if not self.alive:
            clock = time.perf_counter()
            self.start()
            timing["replace_s"] = timing.get("replace_s", 0.0) + time.perf_counter() - clock


class WorkerPool:
    """`size` worker slots, one per cell thread. Slot i sees only GPU
    `gpu_ids[i % len(gpu_ids)]` (CUDA_VISIBLE_DEVICES, `slot_gpus`): each GPU has its own
    slots and fork servers, and any slot's thread may take any cell's examples, so the cells
    spread over the GPUs; none is visible to a slot but the run's."""

    def __init__(
        self,
        size: int,
        *,
        gpu_ids: Sequence[str] = (),
        health_hooks: Sequence[str] = (),
        log_dir: Path | None = None,
        spare: bool = False,
        fork: bool = False,
    ) -> None:
        if size < 1:
            raise ValueError(f"a pool needs at least one worker, got {size}")
        self.workers: list[Worker] = []
        for slot, gpu in enumerate(slot_gpus(size, gpu_ids)):
            env = {}
            if gpu is not None:
                env["CUDA_VISIBLE_DEVICES"] = gpu
            log = None if log_dir is None else log_dir / f"worker-{slot}.log"
            self.workers.append(
                Worker(
                    slot,
                    env=env,
                    health_hooks=health_hooks,
                    log_path=log,
                    spare=spare and not fork,
                    fork=fork,
                )
            )

    def close(self) -> None:
        for worker in self.workers:
            worker.close()
