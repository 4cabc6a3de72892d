"""The request/response half of a worker slot (`Transport`): one JSON line to the process's
stdin per request, answers read back from its stdout by id, and how a lost process is told.

Crash and hang are judged here, because a dead or stuck process cannot report on itself: end
of file on the protocol pipe is a crash (the exit status and the last line of the worker's
stderr say how), no answer within the timeout is a hang (the process group is killed, or a
fork server asked to kill its child). Which process answers, and starting and replacing it,
is the slot's (`pool.Worker`).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from typing import IO, Any

from caiconform.results.outcome import CRASH, HANG
from caiconform.runner.protocol import decode, encode
from caiconform.runner.zygote import ZygoteProcess

__all__ = ["Transport", "WorkerLost", "reap"]


class WorkerLost(Exception):
    """The worker died or hung during a request; `outcome` is CRASH or HANG."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


def reap(proc: subprocess.Popen | ZygoteProcess | None) -> None:
    """Kill a worker's process group (if still running), reap it and close its pipes."""
    if proc is None:
        return
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    for stream in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError, ValueError):
            stream.close()


def _signal_name(returncode: int) -> str:
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-returncode).name
        return f"signal {-returncode}"
    return f"exit status {returncode}"


class Transport:
    """Requests to one worker process and their answers. `_proc` is the process (set by the
    slot's `start`, which `_send` calls first), `_log` its stderr, `_buffer` what was read of
    its stdout past the last answer; in fork mode (`fork`) `_child` is the pid of the server's
    child that runs the examples."""

    def __init__(self, fork: bool) -> None:
        self.fork = fork
        self._child: int | None = None  # fork mode: pid of the process running examples
        self._proc: subprocess.Popen | ZygoteProcess | None = None
        self._log: IO[bytes] | None = None
        self._buffer = b""
        self._next_id = 0

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Make sure a process is running (the slot's: `pool.Worker.start`)."""
        raise NotImplementedError

    def _discard(self) -> None:
        """Kill the current process group (if still running), reap it and close its pipes."""
        proc, self._proc = self._proc, None
        reap(proc)

    def _log_offset(self) -> int:
        assert self._log is not None
        self._log.flush()
        return os.fstat(self._log.fileno()).st_size

    def _death_note(self, offset: int) -> str:
        """The most telling line the worker wrote to stderr since `offset` (a faulthandler
        'Fatal Python error' line when there is one)."""
        if self._log is None:
            return ""
        self._log.flush()
        with open(self._log.fileno(), "rb", closefd=False) as fh:
            fh.seek(offset)
            lines = [ln.strip() for ln in fh.read()[-8192:].decode(errors="replace").splitlines()]
        lines = [ln for ln in lines if ln]
        for line in lines:
            if line.startswith("Fatal Python error"):
                return line
        return lines[-1] if lines else ""

    def _read_answer(self, deadline: float) -> bytes:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and wait up to `timeout` seconds for its answer. Raises WorkerLost
        (with CRASH or HANG) after reaping or killing the process; the next request restarts it."""
        request_id, offset = self._send(message)
        return self._receive(request_id, time.monotonic() + timeout, timeout, offset)

    def _send(self, message: dict[str, Any]) -> tuple[int, int]:
        """Send `message` (the process started first if needed) under a new id: (the id, the
        worker log's size before it, where a death note would begin)."""
        self.start()
        assert self._proc is not None and self._proc.stdin is not None
        self._next_id += 1
        offset = self._log_offset()
        try:
            self._proc.stdin.write(encode({**message, "id": self._next_id}))
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise self._crashed(exc, offset) from None
        return self._next_id, offset

    def _receive(
        self, request_id: int, deadline: float, timeout: float, offset: int
    ) -> dict[str, Any]:
        """The next answer to `request_id`, by `deadline`. Raises WorkerLost (with CRASH or
        HANG) after reaping or killing the process."""
        try:
            answer = self._answer_to(request_id, deadline)
        except TimeoutError:
            self._kill_hung()
            raise WorkerLost(
                HANG, f"no answer within {timeout:g} s; worker killed and replaced"
            ) from None
        except (EOFError, BrokenPipeError, OSError, ValueError) as exc:
            raise self._crashed(exc, offset) from None
        if "lost" in answer:  # fork mode: the forked process died; the server lives on
            note = self._death_note(offset)
            status = _signal_name(int(answer["lost"]))
            raise WorkerLost(CRASH, f"worker died ({status})" + (f": {note}" if note else ""))
        return answer

    def _crashed(self, exc: BaseException, offset: int) -> WorkerLost:
        """The process died (its pipe broke or closed): reap it and say how it ended."""
        proc = self._proc
        assert proc is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        status = _signal_name(proc.returncode) if proc.returncode is not None else str(exc)
        note = self._death_note(offset)
        self._discard()
        return WorkerLost(CRASH, f"worker died ({status})" + (f": {note}" if note else ""))

    def _answer_to(self, request_id: int, deadline: float) -> dict[str, Any]:
        """Read answers until the one to `request_id` (noting the fork server's child pid)."""
        while True:
            answer = decode(self._read_answer(deadline))
            if "child" in answer:
                self._child = answer["child"]
            if answer.get("id") == request_id:
                return answer

    def _kill_hung(self) -> None:
        """A request timed out: kill the process running it. A fork server is asked to kill
        its child (and answers the request as lost once it has); anything else, or a server
        that does not answer, is killed whole."""
        if self.fork and self.alive:
            try:
                self._proc.stdin.write(encode({"op": "kill"}))
                self._proc.stdin.flush()
                self._answer_to(self._next_id, time.monotonic() + 10)
                return
            except (TimeoutError, EOFError, OSError, ValueError):
                pass
        self._discard()

    def call(self, function: str, timeout: float, **kwargs: Any) -> Any:
        """Call a JSON-returning "module:function" in the worker. Raises WorkerLost, or
        RuntimeError with the worker's description of an exception."""
        answer = self.request({"op": "call", "function": function, "kwargs": kwargs}, timeout)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer.get("value")
