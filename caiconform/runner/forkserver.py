"""A worker host that forks its workers: the imports are paid once, a crash costs a fork.

Started as `python -m caiconform.runner.process --fork` (`pool.Worker(fork=True)`). The host never
runs an example and never touches CUDA (a process that initialised CUDA cannot fork a usable
child). On `prepare` it only *imports*: the check module, and each library through the adapter
source's `preload(name)` when it has one (import-only, e.g. `libraries.preload`). The examples
run in a forked *child*, an ordinary worker (`worker.serve`): the host relays each request to it
and its answer back, adding `"child": pid`. A second child is kept forked and prepared for the
current cell (its `prepare` sent there too: that is where CUDA contexts are made and libraries
warmed) while the first works; a new child is prepared for the current cell only (`replay`).

When the child dies (a crash, or killed after a hang) the host answers the request it was
running (for a batch, `run_many`, the example after the last it answered) with
`{"lost": returncode}`, promotes the spare and forks the next one: replacing a
crashed worker costs a fork and a prepare done in the background, not a cold import of torch or
CuPy. A child killed by a fatal signal is seen at the signal, not at its end: its faulthandler
writes down a *death pipe* of its own, whose first line ("Fatal Python error: Segmentation
fault") the host takes as the child's death (and copies, with the traceback, to its stderr,
the worker log); the child then ends and is reaped while the next examples run, as a retired
one is. A child that answers `retire` (a poisoned context, or an example its family's `taints`
flags) has its answer passed on as soon as the spare is promoted; it is reaped later, while
the next examples run. After new imports the host replaces its children by forks that share
them, so no child imports a library the host already holds; likewise when a cell's family
wants other hardware queues per CUDA context than the children were forked with (`queues_for`:
one queue for the families that never need two streams' work to overlap, which makes a
context much cheaper to make beside others).

Spares are not *warmed* (sent the cell's first passing example ahead of need, so a library's
first exchange in a process is paid in the background): the parent then waits for the warming
spare instead, and a run is slower warmed than not (docs/performance.md, "Figures behind the
code").

Requests besides the worker's: `kill` (SIGKILL the current child's process group; the parent
sends it when a request timed out) and `exit`. The host's first line is `{"child": pid}`.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import importlib
import os
import select
import signal
import sys
import time
from typing import Any

from caiconform.runner.protocol import decode, encode
from caiconform.runner.resolve import resolve
from caiconform.runner.worker import serve

__all__ = ["ForkServer", "PRELOAD_ENV", "preload_from_env"]

#: an import that took longer is worth replacing the children by forks that share it
_WORTH_A_FORK_S = 0.02
#: JSON `{"modules": [...], "libraries": [...], "source": "..."}`: what the host imports before
#: it forks its first child (the run's check modules and every available library), so a cell
#: with libraries new to this worker imports nothing and never has its children replaced
#: (each replacement prepares its children again: CUDA initialised again per library)
PRELOAD_ENV = "CAICONFORM_PRELOAD"


#: the driver's count of hardware work queues ("connections") per CUDA context, read when a
#: context is made (default 8). A context's making takes a driver-wide turn that grows with it,
#: so children making theirs at once beside busy processes wait several times longer with the
#: default than with one queue (docs/performance.md, "Figures behind the code";
#: `scripts/diag_context_contention.py`). The run makes ~150-200 contexts (a
#: crash or poisoned context costs one), so a
#: family that never needs two streams' work to overlap has its children made with one queue
#: (`SINGLE_QUEUE = True` in its module). One queue runs every stream's work in the order it
#: was issued, which would hide a consumer that does not wait for the producer's stream: the
#: streams family (its spin) keeps the default, and so does a family that does not say.
QUEUES_ENV = "CUDA_DEVICE_MAX_CONNECTIONS"
#: "0": every child keeps the driver's default queues (the A/B of the above)
SINGLE_QUEUE_ENV = "CAICONFORM_SINGLE_QUEUE"

#: the fatal signals faulthandler handles, by the name its first line gives them ("Fatal Python
#: error: <name>"): what a child's death note says it died of
_FATAL = {
    "Segmentation fault": signal.SIGSEGV,
    "Aborted": signal.SIGABRT,
    "Bus error": signal.SIGBUS,
    "Floating-point exception": signal.SIGFPE,
    "Illegal instruction": signal.SIGILL,
}
#: a child that wrote its death note and still lives this long after (a library's own handler
#: hung) is killed
_DYING_GRACE_S = 5.0
#: the death file of a forked child (faulthandler keeps it too; this keeps it obviously alive)
_death_file: Any = None


def queues_for(module: Any) -> str | None:
    """The `QUEUES_ENV` value a child gets for a cell of family `module`: "1" for a family
    that declares `SINGLE_QUEUE`, None (inherit the host's environment) for any other, when
    the user set `QUEUES_ENV` themselves, or with `SINGLE_QUEUE_ENV=0`."""
    if QUEUES_ENV in os.environ or os.environ.get(SINGLE_QUEUE_ENV) == "0":
        return None
    return "1" if getattr(module, "SINGLE_QUEUE", False) else None


def _prepare_key(fields: dict[str, Any]) -> str:
    """A prepare request (less its id) as a hashable key."""
    return repr(sorted(fields.items()))


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


class _Child:
    """A forked worker: its pid, the pipes to it and from it, the lines read from it, and the
    read end of its death pipe (what its faulthandler writes on a fatal signal)."""

    def __init__(self, pid: int, to_fd: int, from_fd: int, death_fd: int = -1) -> None:
        self.pid = pid
        self.to_fd = to_fd
        self.from_fd = from_fd
        self.death_fd = death_fd
        self.death_note = b""
        #: when a dying child still alive is killed (`ForkServer._reap_dying`)
        self.deadline: float | None = None
        self.buffer = b""
        #: the prepares this child has been sent (by the host or relayed from the parent)
        self.prepared: set[str] = set()
        #: its `QUEUES_ENV` (None: the host's), fixed at its fork: its contexts are made so
        self.queues: str | None = None

    def read_death(self) -> bool:
        """Copy what the death pipe holds to the host's stderr (the worker log, where the
        parent looks for the death's telling line) and keep its start; False at its end of
        file (the pipe is then closed)."""
        try:
            chunk = os.read(self.death_fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            self.close_death()
            return False
        with contextlib.suppress(OSError):
            _write_all(2, chunk)
        if len(self.death_note) < 4096:
            self.death_note += chunk
        return True

    def read_dump(self, quiet: float = 0.02, limit: float = 0.5) -> None:
        """Copy the rest of a death note being written (faulthandler's traceback follows its
        first line within microseconds): until the pipe is quiet for `quiet` seconds, its end,
        or `limit`. So the whole note is in the log before the parent reads it, not in the
        log span of the next request."""
        deadline = time.monotonic() + limit
        while self.death_fd >= 0:
            wait = min(quiet, deadline - time.monotonic())
            if wait <= 0 or not select.select([self.death_fd], [], [], wait)[0]:
                return
            if not self.read_death():
                return

    def drain_death(self) -> None:
        """Copy what the death pipe holds now, without waiting for more, and close it."""
        while self.death_fd >= 0 and select.select([self.death_fd], [], [], 0)[0]:
            if not self.read_death():
                return
        self.close_death()

    def close_death(self) -> None:
        if self.death_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.death_fd)
            self.death_fd = -1

    def fatal_signal(self) -> int | None:
        """The signal the death note names once its first line is whole; else None."""
        first, newline, _ = self.death_note.partition(b"\n")
        if not newline:
            return None
        name = first.decode(errors="replace").removeprefix("Fatal Python error:").strip()
        found = _FATAL.get(name)
        return int(found) if found is not None else None

    def send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):  # dead: its end of file says so
            _write_all(self.to_fd, encode(message))

    def read_lines(self) -> list[bytes] | None:
        """The complete lines available now; None at end of file (the child is gone)."""
        chunk = os.read(self.from_fd, 1 << 16)
        if not chunk:
            return None
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        return lines

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        """Close the protocol pipes (the death pipe stays: `close_death`)."""
        for fd in (self.to_fd, self.from_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.to_fd = self.from_fd = -1

    def reap(self) -> int:
        """Close the pipes and wait for the process; its returncode (negative: a signal)."""
        self.close()
        self.drain_death()
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return -int(signal.SIGKILL)
        return os.waitstatus_to_exitcode(status)


def preload_from_env() -> None:
    """Import what `PRELOAD_ENV` names, import-only as a prepare's imports are (a fork
    server's start, or the zygote's); what fails is left to the prepare (and the child) that
    meets it, which report it."""
    raw = os.environ.get(PRELOAD_ENV)
    if not raw:
        return
    import json

    started = time.perf_counter()
    try:
        spec = json.loads(raw)
        modules, libraries = list(spec["modules"]), list(spec["libraries"])
        source = spec.get("source")
    except (ValueError, KeyError, TypeError) as exc:
        print(f"fork server: {PRELOAD_ENV} unreadable: {exc}", file=sys.stderr)
        return
    seconds: dict[str, float] = {}
    for module in modules:
        began = time.perf_counter()
        try:
            importlib.import_module(module)
        except Exception as exc:
            print(f"fork server: preloading {module}: {exc}", file=sys.stderr)
        seconds["check modules"] = seconds.get("check modules", 0.0) + time.perf_counter() - began
    preload = None
    if source:
        with contextlib.suppress(ImportError, AttributeError, ValueError):
            preload = resolve(f"{source}:preload")
    for name in libraries if preload is not None else ():
        began = time.perf_counter()
        try:
            preload(name)
        except Exception as exc:
            print(f"fork server: preloading {name}: {exc}", file=sys.stderr)
        seconds[name] = time.perf_counter() - began
    # each import's own seconds, in the order made (a library's shared dependencies are paid
    # by the first that imports them): what a run's first fork waits for (scripts/timing_summary.py)
    each = ", ".join(f"{name} {s:.2f}" for name, s in seconds.items() if s >= 0.01)
    print(
        f"fork server: preloaded {len(modules)} check module(s) and libraries "
        f"{', '.join(libraries) or '-'} in {time.perf_counter() - started:.2f} s ({each})",
        file=sys.stderr,
    )


def _die_with_host(host: int) -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != host:
        os._exit(0)


class ForkServer:
    """The host's loop: relay the parent's requests to the current child, keep a spare."""

    def __init__(self, in_fd: int, out_fd: int, hooks: list[str]) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.hooks = hooks
        self.buffer = b""
        #: the prepare of the cell the parent asked for last: the one a new child is given
        self.current: dict[str, Any] | None = None
        self.imported: set[tuple] = set()
        #: the `QUEUES_ENV` of children forked now: the current cell's family's (`queues_for`)
        self.queues: str | None = None
        self.child: _Child | None = None
        self.spare: _Child | None = None
        self.pending: Any = None  # id of the parent's request the child is running
        self.replayed = 0
        #: children retired, dead of a fatal signal or replaced, not yet reaped
        self.dying: list[_Child] = []

    # -- children ---------------------------------------------------------------------------
    def _fork(self) -> _Child:
        """A new child, sent every prepare so far (answers swallowed)."""
        child_in, to_child = os.pipe()
        from_child, child_out = os.pipe()
        death_from, death_to = os.pipe()
        host = os.getpid()
        queues = self.queues
        # everything the host holds (the libraries it imported) goes to the collector's
        # permanent generation: a child's gc.collect() then scans only what its examples made,
        # not torch's/JAX's object graphs (an example that collects several times, as the
        # lifetime family's do, would otherwise scan them each time); the pages also stay
        # shared after the fork
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the child: an ordinary worker on its own pipes
            try:
                keep = {child_in, child_out, death_to, 2}
                for fd in self._fds() + [to_child, from_child, death_from]:
                    if fd not in keep:
                        with contextlib.suppress(OSError):
                            os.close(fd)
                os.setpgid(0, 0)
                if queues is not None:  # before any CUDA call: the driver reads it at cuInit
                    os.environ[QUEUES_ENV] = queues
                _die_with_host(host)
                global _death_file
                _death_file = os.fdopen(death_to, "w")
                faulthandler.enable(file=_death_file, all_threads=True)
                serve(os.fdopen(child_in, "rb"), os.fdopen(child_out, "wb"), self.hooks)
            except BaseException as exc:
                print(f"forked worker: {type(exc).__name__}: {exc}", file=sys.stderr)
            finally:
                os._exit(0)
        os.close(child_in)
        os.close(child_out)
        os.close(death_to)
        child = _Child(pid, to_child, from_child, death_from)
        child.queues = queues
        for request in self.replay():
            self._send_prepare(child, request)
        return child

    def replay(self) -> list[dict[str, Any]]:
        """What a new child is prepared with: the current cell's prepare only. Replaying every
        cell the worker met made each replacement (a crash, a poisoned context, new imports)
        initialise CUDA for every library again, seconds with torch and JAX among them; a cell
        met again is prepared by its first example instead."""
        return [self.current] if self.current is not None else []

    def _send_prepare(self, child: _Child, request: dict[str, Any]) -> None:
        key = _prepare_key(request)
        if key in child.prepared:
            return
        child.prepared.add(key)
        self.replayed += 1
        child.send({**request, "id": f"host-{self.replayed}"})

    def _fds(self) -> list[int]:
        fds = [self.in_fd, self.out_fd]
        for child in (self.child, self.spare, *self.dying):
            if child is not None:
                fds += [child.to_fd, child.from_fd, child.death_fd]
        return [fd for fd in fds if fd >= 0]

    def _replace(self) -> None:
        """The current child is gone: reap it, answer the request it was running, promote the
        spare (or fork anew) and fork the next spare."""
        child, self.child = self.child, None
        assert child is not None
        child.kill()
        returncode = child.reap()
        self._promote()
        self.spare = self._fork()
        if self.pending is not None:
            self._answer({"id": self.pending, "lost": returncode})
            self.pending = None

    def _retire(self, answer: dict[str, Any]) -> None:
        """The current child answered and is unfit (a poisoned context): promote the spare,
        pass the answer on, fork the next spare, and reap the old child later (`_reap_dying`).
        Reaping first would make the parent wait, seconds, for the driver to tear down a
        faulted context before the poisoned result reached it."""
        child, self.child = self.child, None
        assert child is not None
        self._let_die(child, grace=0.0)
        self._promote()
        self._answer(answer)
        self.spare = self._fork()

    def _died(self, signum: int) -> None:
        """The current child wrote its death note (a fatal signal): answer the request it was
        running as lost to that signal at once, promote the spare and fork the next; the
        child ends and is reaped later, as a retired one is. Waiting for its end would make
        the parent wait, seconds, for the driver to tear down its CUDA contexts."""
        child, self.child = self.child, None
        assert child is not None
        child.read_dump()
        self._let_die(child, grace=_DYING_GRACE_S)
        self._promote()
        if self.pending is not None:
            self._answer({"id": self.pending, "lost": -signum})
            self.pending = None
        self.spare = self._fork()

    def _let_die(self, child: _Child, grace: float) -> None:
        """Leave `child` to end on its own (killed after `grace` seconds) and to be reaped by
        `_reap_dying`; its death pipe is still copied to the log until then."""
        child.close()
        if grace <= 0:
            child.kill()
        child.deadline = time.monotonic() + grace
        self.dying.append(child)

    def _promote(self) -> None:
        if self.spare is not None:
            self.child, self.spare = self.spare, None
        else:
            self.child = self._fork()

    def _reap_dying(self, block: bool = False) -> None:
        """Reap the dying children that have ended (all of them when `block`), killing those
        past their grace."""
        now = time.monotonic()
        for child in list(self.dying):
            if block or (child.deadline is not None and now > child.deadline):
                child.kill()
                child.deadline = None
            try:
                done, _ = os.waitpid(child.pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                done = child.pid
            if done:
                child.drain_death()
                self.dying.remove(child)

    def _refresh(self) -> None:
        """New imports in the host (children forked before them would import again), or a
        cell whose family wants other queues than the children's contexts were made with
        (`queues_for`): both are replaced by new forks, prepared for the current cell
        (`replay`): on a prepare, none, since the cell it prepares becomes current only after."""
        for child in (self.child, self.spare):
            if child is not None:
                self._let_die(child, grace=0.0)
        self.child = self._fork()
        self.spare = self._fork()

    # -- the parent's requests --------------------------------------------------------------
    def _answer(self, message: dict[str, Any]) -> None:
        if self.child is not None:
            message["child"] = self.child.pid
        _write_all(self.out_fd, encode(message))

    def _import(self, request: dict[str, Any]) -> bool:
        """Import what a prepare request names, without running anything; True when that
        imported something a child would otherwise import again (new modules, or time spent:
        a preload may load what is not a module)."""
        key = (request.get("module"), request.get("producer"), request.get("consumer"))
        if key in self.imported:
            return False
        self.imported.add(key)
        modules = len(sys.modules)
        started = time.perf_counter()
        try:
            importlib.import_module(request["module"])
            source = request.get("source")
            preload = None
            if source:
                with contextlib.suppress(ImportError, AttributeError, ValueError):
                    preload = resolve(f"{source}:preload")
            for name in filter(None, dict.fromkeys(key[1:])):
                if preload is not None:
                    preload(name)
        except Exception as exc:  # the child meets and reports the same problem
            print(f"fork server: preparing {key}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return len(sys.modules) > modules or time.perf_counter() - started > _WORTH_A_FORK_S

    def _request(self, request: dict[str, Any]) -> bool:
        """Handle one request of the parent's; False to stop serving."""
        op = request.get("op")
        assert self.child is not None
        if op == "exit":
            return False
        if op == "kill":
            self.child.kill()
            return True
        if op == "prepare":
            imported = self._import(request)
            fields = {k: v for k, v in request.items() if k != "id"}
            if self._made_for_other_queues(request.get("module")) or imported:
                # the new children are not prepared for the cell before (its libraries'
                # CUDA state would be made in vain): the child gets this request below, the
                # spare its replay of it
                self.current = None
                self._refresh()
            self.current = fields
            if self.spare is not None:
                self._send_prepare(self.spare, fields)
            self.child.prepared.add(_prepare_key(fields))
        elif op in ("run", "run_many"):
            family = str(request.get("execute") or "").partition(":")[0]
            if self._made_for_other_queues(family):
                self._refresh()
        self.pending = request.get("id")
        assert self.child is not None
        self.child.send(request)
        return True

    def _made_for_other_queues(self, module: str | None) -> bool:
        """Take the queues a cell of `module` (a family's, already imported) wants for the
        children forked from now on (`queues_for`); True when the current child or the spare
        was forked with others (its contexts, made or to be made, would have them)."""
        self.queues = queues_for(sys.modules.get(module or ""))
        return any(c is not None and c.queues != self.queues for c in (self.child, self.spare))

    def _from_child(self) -> None:
        assert self.child is not None
        lines = self.child.read_lines()
        if lines is None:
            self._replace()
            return
        for line in lines:
            answer = decode(line)
            if str(answer.get("id", "")).startswith("host-"):
                continue
            if answer.get("id") == self.pending and not answer.get("more"):
                self.pending = None  # a batch's (`run_many`) last answer, or the only one
            if answer.get("retire"):  # unfit: replaced before the next request reaches it
                self._retire(answer)
                return
            self._answer(answer)

    def _from_spare(self) -> None:
        assert self.spare is not None
        if self.spare.read_lines() is None:  # died while preparing: the next one is forked
            self._let_die(self.spare, grace=0.0)  # when it is needed
            self.spare = None

    def _death_pipes(self, ready: list[int]) -> None:
        """Copy what the death pipes in `ready` hold to the log; a current child whose death
        note is whole is taken as dead (`_died`), a spare's as dying (forked anew when
        needed)."""
        for child in (self.child, self.spare, *self.dying):
            if child is None or child.death_fd < 0 or child.death_fd not in ready:
                continue
            child.read_death()
            signum = child.fatal_signal()
            if signum is None:
                continue
            if child is self.child:
                self._died(signum)
                return  # fd numbers in `ready` may now name other pipes
            if child is self.spare:
                self._let_die(child, grace=_DYING_GRACE_S)
                self.spare = None

    def serve(self) -> None:
        preload_from_env()
        self.child = self._fork()
        self._answer({"id": None})
        try:
            while True:
                self._reap_dying()  # first: it closes the death pipes of the reaped
                fds = [self.in_fd, self.child.from_fd]
                if self.spare is not None:
                    fds.append(self.spare.from_fd)
                deaths = [c.death_fd for c in (self.child, self.spare, *self.dying) if c]
                fds += [fd for fd in deaths if fd >= 0]
                ready, _, _ = select.select(fds, [], [], 0.1 if self.dying else None)
                children = (self.child, self.spare)
                if self.child.from_fd in ready:
                    self._from_child()
                if (self.child, self.spare) != children:
                    continue  # replaced: fd numbers in `ready` may now name other pipes
                self._death_pipes(ready)
                if (self.child, self.spare) != children:
                    continue
                if self.spare is not None and self.spare.from_fd in ready:
                    self._from_spare()
                    continue
                if self.in_fd in ready:
                    chunk = os.read(self.in_fd, 1 << 16)
                    if not chunk:
                        return
                    self.buffer += chunk
                    *lines, self.buffer = self.buffer.split(b"\n")
                    for line in lines:
                        if not self._request(decode(line)):
                            return
        finally:
            for child in (self.child, self.spare):
                if child is not None:
                    child.kill()
                    child.reap()
            self._reap_dying(block=True)
