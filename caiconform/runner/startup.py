"""A run's start, side by side: the environment capture, the library probes and the streams spin
calibration, each in worker processes of its own.

None of them needs another's result, and run one after another they would keep the first
example waiting for a large share of a default run (docs/performance.md): the probes run in parallel
(one process per library, up to `processes`), the environment capture beside them, and the
calibration (`runner.calibrate`) is started at once when the run may have streams cells on a
GPU (its family was asked for and a GPU is visible) and kept only if it does; the families'
coverage floors are built in a thread of the parent meanwhile, and the libraries' builds
(`libraries.builds`: compiles every worker would repeat) in processes of their own, which the
start does not wait for (run.json `builds` says how long they took). Each helper
process is started and closed in the thread that uses it (a worker dies with the thread that
started it, `process._exit_with_parent`). `timings` says how long each part took; the runner
keeps them in run.json (`startup`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from caiconform.rundir import RunDir
from caiconform.runner.libraries import LibraryInfo
from caiconform.runner.pool import Worker
from caiconform.runner.startcache import StartCache
from caiconform.runner.transport import WorkerLost

__all__ = ["Startup", "PROBE_TIMEOUT_S", "probe_all", "save_run_meta"]

#: how long probing one library (importing it) may take in a worker
PROBE_TIMEOUT_S = 300.0
#: how long an available library's adapter self-check may take after its probe
SELFCHECK_TIMEOUT_S = 120.0


class _Task(threading.Thread):
    """A function run in a thread of its own; `result()` joins it and gives its value (or
    raises what it raised) and how long it took."""

    def __init__(self, name: str, function: Callable[[], Any]) -> None:
        super().__init__(name=name, daemon=True)
        self.function = function
        self.value: Any = None
        self.error: BaseException | None = None
        self.seconds = 0.0

    def run(self) -> None:
        started = time.perf_counter()
        try:
            self.value = self.function()
        except BaseException as exc:  # handed to the joining thread
            self.error = exc
        finally:
            self.seconds = time.perf_counter() - started

    def result(self) -> Any:
        self.join()
        if self.error is not None:
            raise self.error
        return self.value


def _quietly(function: Callable[[], Any]) -> None:
    with contextlib.suppress(Exception):  # met again, and reported, where the work is needed
        function()


def _in_worker(function: str, log_path: Path | None, **kwargs: Any) -> Any:
    """Call `function` in a fresh worker that sees every GPU, closed afterwards."""
    worker = Worker(-1, log_path=log_path)
    try:
        return worker.call(function, PROBE_TIMEOUT_S, **kwargs)
    finally:
        worker.close()


def _floor_elsewhere(module: str, log_dir: Path, cache: StartCache | None = None) -> None:
    """`module`'s floor in its FLOOR_PARTS parts (1 if it names none), each built in a worker
    process of its own, side by side, then given to `module.seed_floor`; taken from
    `module.shipped_floor()` instead when the package keeps it as this code builds it, or
    read from `cache` when the last run in this environment kept it."""
    family = importlib.import_module(module)
    shipped = getattr(family, "shipped_floor", None)
    rows = shipped() if shipped is not None else None
    if rows is not None:  # the floor kept with the package, as the code here builds it
        family.seed_floor([rows])
        return
    kept = None if cache is None else cache.get(f"floor:{module}")
    if isinstance(kept, list):
        family.seed_floor(kept)
        return
    parts = getattr(family, "FLOOR_PARTS", 1)
    tasks = [
        _Task(
            f"floor-{i}",
            lambda i=i: _in_worker(
                f"{module}:floor_data", log_dir / f"floor-{i}.log", part=i, parts=parts
            ),
        )
        for i in range(parts)
    ]
    for task in tasks:
        task.start()
    built = [task.result() for task in tasks]
    family.seed_floor(built)
    if cache is not None:
        cache.put(f"floor:{module}", built)


def probe_all(
    source: str,
    names: Sequence[str],
    processes: int,
    log_dir: Path | None = None,
    seconds: dict[str, float] | None = None,
) -> dict[str, LibraryInfo]:
    """Each library's probe (`source:probe`), one call each, in up to `processes` workers side
    by side, the longest first by the source's `probe_seconds` when it has one; a library
    whose import crashes or hangs is marked unavailable with that reason and the others are
    still probed. The answers are in `names` order. `seconds`, when given, gets each library's
    probe and self-check time (run.json `startup.probes_s`: which library the start waits
    for)."""
    names = list(dict.fromkeys(names))
    infos: dict[str, LibraryInfo] = {}
    lock = threading.Lock()
    adapters = importlib.import_module(source)  # the adapter source
    checks = callable(getattr(adapters, "selfcheck", None))
    queue = list(reversed(_longest_first(names, getattr(adapters, "probe_seconds", None))))

    def probe_some(index: int) -> None:
        log = None if log_dir is None else log_dir / f"probe-{index}.log"
        worker = Worker(-1, log_path=log)
        try:
            while True:
                with lock:
                    if not queue:
                        return
                    name = queue.pop()
                began = time.perf_counter()
                try:
                    data = worker.call(f"{source}:probe", PROBE_TIMEOUT_S, name=name)
                    info = LibraryInfo.from_dict(data)
                except (WorkerLost, RuntimeError) as exc:
                    info = LibraryInfo(name, False, f"probing it failed: {exc}")
                if checks and info.available:
                    info = _with_selfcheck(worker, source, info)
                with lock:
                    infos[name] = info
                    if seconds is not None:
                        seconds[name] = round(time.perf_counter() - began, 3)
        finally:
            worker.close()

    tasks = [
        _Task(f"probe-{i}", lambda i=i: probe_some(i))
        for i in range(max(1, min(processes, len(names))))
    ]
    for task in tasks:
        task.start()
    for task in tasks:
        task.result()
    return {name: infos[name] for name in names}


def _longest_first(names: Sequence[str], seconds: Callable[[str], float] | None) -> list[str]:
    """`names` in the order they are probed: by the source's `probe_seconds` estimate, longest
    first (the order given among equals), so the probe phase is not held up by a long probe
    begun last; as given when the source has no estimate."""
    if not callable(seconds):
        return list(names)
    return sorted(names, key=lambda name: -float(seconds(name)))


def _with_selfcheck(worker: Worker, source: str, info: LibraryInfo) -> LibraryInfo:
    """`info` with the source's `selfcheck` of its library, asked of `worker` (which the
    probe warmed); a self-check that crashes, hangs or raises is recorded as its error."""
    try:
        answer = worker.call(f"{source}:selfcheck", SELFCHECK_TIMEOUT_S, name=info.name)
    except (WorkerLost, RuntimeError) as exc:
        answer = {"adapter": info.name, "error": f"the self-check failed: {exc}"[:300]}
    return dataclasses.replace(info, selfcheck=answer)


class Startup:
    """The parts of a run's start that need worker processes, overlapped.

    `begin()` starts the environment capture (unless `out/env.json` exists) and, when
    `calibrate` and run.json holds no calibration yet (a resumed run keeps its own), the spin
    calibration; `probe(...)` probes the libraries meanwhile; `finish()` waits for the rest.
    With a `cache` (`runner.startcache`), the probes, the calibration and the floors built in
    workers are read from the last run in this environment when it kept them, and kept when
    measured.
    """

    def __init__(self, out: Path, *, calibrate: bool, cache: StartCache | None = None) -> None:
        self.out = out
        self.calibrate = calibrate
        self.cache = cache
        self._kept_calibration: dict[str, Any] | None = None
        self.timings: dict[str, float] = {}
        self._env: _Task | None = None
        self._spin: _Task | None = None
        self._warm: _Task | None = None
        self._floors: _Task | None = None
        self._builds: list[_Task] = []
        self._started = time.perf_counter()

    def begin(
        self,
        warm: Sequence[Callable[[], Any]] = (),
        floors: Sequence[str] = (),
        builds: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> None:
        """Start the helpers, and `warm`: work of the parent's own that needs nothing the
        probes find (the families' coverage floors, which `_cell_costs` needs), run in a thread
        meanwhile; what it raises is left to whoever needs that work. `floors`: modules whose
        floor is built in worker processes instead (`_floor_elsewhere`): the adversarial floor
        is several seconds of one core's work, which in the parent's thread or one process would
        be the longest part of the start; in FLOOR_PARTS processes it is not (docs/performance.md).
        `builds`: (function, kwargs) calls, each in a worker process of its own, left to run
        past the start (`save_builds`)."""
        logs = RunDir(self.out).workers
        for i, (function, kwargs) in enumerate(builds):
            task = _Task(
                f"build-{i}",
                lambda f=function, k=kwargs, i=i: _in_worker(f, logs / f"build-{i}.log", **k),
            )
            task.start()
            self._builds.append(task)
        if floors:
            self._floors = _Task(
                "floors",
                lambda: [
                    _quietly(lambda m=m: _floor_elsewhere(m, logs, self.cache)) for m in floors
                ],
            )
            self._floors.start()
        if warm:
            self._warm = _Task("warm", lambda: [_quietly(function) for function in warm])
            self._warm.start()
        if not RunDir(self.out).env.exists():
            self._env = _Task("capture-env", self._capture_env)
            self._env.start()
        wanted = self.calibrate and self.saved_calibration() is None
        if wanted and self.cache is not None:
            kept = self.cache.get("calibration")
            self._kept_calibration = kept if isinstance(kept, dict) else None
        if wanted and not self._kept_calibration:
            self._spin = _Task(
                "calibrate-spin",
                lambda: _in_worker(
                    "caiconform.runner.calibrate:calibrate_here", logs / "calibrate.log"
                ),
            )
            self._spin.start()

    def wait_floors(self) -> None:
        """Wait for the floors built elsewhere (`begin(floors=...)`); one that failed is built
        by the parent when first asked for, as a floor with no parts is."""
        if self._floors is not None and "floor_s" not in self.timings:
            self._floors.result()
            self.timings["floor_s"] = round(self._floors.seconds, 3)

    def _capture_env(self) -> None:
        try:
            env = _in_worker("caiconform.env:capture", None)
        except (WorkerLost, RuntimeError) as exc:
            env = {"error": f"environment capture failed: {exc}"}
        RunDir(self.out).env.write_text(json.dumps(env, indent=1) + "\n")

    def probe(self, source: str, names: Sequence[str], processes: int) -> dict[str, LibraryInfo]:
        """Each library's probe and self-check (`probe_all`), or what the last run in this
        environment kept of them; kept when none failed."""
        started = time.perf_counter()
        infos = self._kept_probes(names)
        if infos is None:
            seconds: dict[str, float] = {}
            infos = probe_all(source, names, processes, RunDir(self.out).workers, seconds)
            self.timings["probes_s"] = seconds  # type: ignore[assignment]
            if self.cache is not None and all(map(_keepable, infos.values())):
                self.cache.put("probes", {n: _info_json(i) for n, i in infos.items()})
        self.timings["probe_s"] = round(time.perf_counter() - started, 3)
        return infos

    def _kept_probes(self, names: Sequence[str]) -> dict[str, LibraryInfo] | None:
        kept = None if self.cache is None else self.cache.get("probes")
        if not isinstance(kept, dict) or set(kept) != set(names):
            return None
        try:
            return {name: LibraryInfo.from_dict(kept[name]) for name in dict.fromkeys(names)}
        except (KeyError, TypeError):
            return None

    def saved_calibration(self) -> dict[str, Any] | None:
        meta = json.loads(RunDir(self.out).run_json.read_text())
        return meta.get("spin_calibration")

    def calibration(self) -> dict[str, Any] | None:
        """The run's spin calibration: saved in run.json before (resumed run), or measured
        now (and saved); None when it was not started."""
        saved = self.saved_calibration()
        if saved is None and self._kept_calibration is not None:
            self._save(spin_calibration=self._kept_calibration)
            return self._kept_calibration
        if saved is not None or self._spin is None:
            return saved
        try:
            calibration = self._spin.result()
        except (WorkerLost, RuntimeError) as exc:
            calibration = {"spin_us": None, "reason": f"calibration failed: {exc}"}
        self.timings["calibrate_s"] = round(self._spin.seconds, 3)
        self._save(spin_calibration=calibration)
        if self.cache is not None and calibration.get("spin_us") is not None:
            self.cache.put("calibration", calibration)
        return calibration

    def finish(self) -> None:
        """Wait for the environment capture (and a calibration nobody asked for); record how
        long the start took in run.json `startup`."""
        if self._env is not None:
            self._env.result()
            self.timings["env_s"] = round(self._env.seconds, 3)
        self.wait_floors()
        if self._warm is not None:
            self._warm.result()
            self.timings["warm_s"] = round(self._warm.seconds, 3)
        if self._spin is not None and "calibrate_s" not in self.timings:
            self._spin.join()  # not needed after all: its process is closed, its result dropped
        self.timings["startup_s"] = round(time.perf_counter() - self._started, 3)
        self._save(startup={**self.timings, **self._cache_state()})

    def _cache_state(self) -> dict[str, Any]:
        """run.json `startup`'s word on the cache: which parts were read from it."""
        if self.cache is None:
            return {"cache": "off"}
        return {"cache": "fresh" if self.cache.fresh else "on", "cached": list(self.cache.hits)}

    def save_builds(self) -> None:
        """Record in run.json `builds` what the builds' calls that ended answered, merged, how
        long the longest of them took (`s`), how many were still running when the run ended
        (`unfinished`) and what failed (`errors`); nothing when the run started none. Called as
        the run ends, so it raises nothing."""
        if not self._builds:
            return
        ended = [task for task in self._builds if not task.is_alive()]
        answers: dict[str, Any] = {}
        errors: list[str] = []
        for task in ended:
            try:
                answers.update(task.result() or {})
            except Exception as exc:  # noqa: BLE001 -- recorded; the cells compile for themselves
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
        entry: dict[str, Any] = {
            "s": round(max((task.seconds for task in ended), default=0.0), 3),
            "answers": answers,
            "unfinished": len(self._builds) - len(ended),
        }
        if errors:
            entry["errors"] = errors
        with contextlib.suppress(OSError, ValueError):
            self._save(builds=entry)

    def _save(self, **entries: Any) -> None:
        save_run_meta(self.out, **entries)


def _keepable(info: LibraryInfo) -> bool:
    """A probe and self-check answer that says something of the environment, not of a stalled
    or lost worker."""
    if info.reason.startswith("probing it failed"):
        return False
    return not (info.selfcheck or {}).get("error", "").startswith("the self-check failed")


def _info_json(info: LibraryInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "available": info.available,
        "reason": info.reason,
        "version": info.version,
        "capabilities": sorted(info.capabilities),
        "needs_gpu": info.needs_gpu,
        "selfcheck": info.selfcheck,
    }


def save_run_meta(out: Path, **entries: Any) -> None:
    """Add `entries` to the run directory's run.json."""
    path = RunDir(out).run_json
    meta = json.loads(path.read_text())
    meta.update(entries)
    path.write_text(json.dumps(meta, indent=1) + "\n")
