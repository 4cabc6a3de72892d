"""One process that imports a run's libraries once and forks the slots' fork servers from itself.

Why: a slot's fork server (`forkserver.py`) that imports every library itself spends seconds
of CPU on it, every slot's server at once while the run's start probes the libraries and builds
its coverage floors, so the start waits on the CPU the imports take. A zygote imports them once
(`forkserver.PRELOAD_ENV`, import-only: no CUDA, so what it forks can still use the GPU) and
forks a fork server for each slot on request, on the slot's own pipes and stderr (passed over a
Unix socket with SCM_RIGHTS), in the slot's environment (its `CUDA_VISIBLE_DEVICES`, its
preload, which is then already imported).

`Zygote` is the parent's side: `spawn(args, env, stderr)` returns a `ZygoteProcess`, which
stands in for the `subprocess.Popen` a `pool.Worker` would have made (pid, stdin, stdout,
poll, wait, returncode): the zygote is the servers' parent, reaps them and sends each exit
status back. The servers die with the zygote (PR_SET_DEATHSIG), the zygote with the run.
On by default (`RunConfig.zygote`; `caiconform run --no-zygote` turns it off): measured on a GPU,
it shortens the default matrix's start and its whole run, with the same finding groups
(docs/performance.md, the zygote rows). A slot whose zygote cannot be asked starts its fork
server cold (`pool.Worker._spawn`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import IO, Any

__all__ = ["Zygote", "ZygoteProcess", "main"]

_MESSAGE = 1 << 20
#: how long a server's exit status may take to arrive once its process has ended
_STATUS_WAIT_S = 1.0
#: the exit status reported when the zygote never sent one (it died first)
UNKNOWN_STATUS = 255
#: how long a spawn may wait for the zygote (its imports, then a fork), as a fork server's own
#: imports may take (`pool.PREPARE_TIMEOUT_S`); after that the zygote is given up
SPAWN_TIMEOUT_S = 300.0


class Zygote:
    """The parent's handle on a zygote process: started at once, importing what `env`'s
    `PRELOAD_ENV` names; `spawn` waits for those imports to end."""

    def __init__(self, env: dict[str, str], log: IO[bytes]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        self._lock = threading.Lock()
        self._exits: dict[int, int] = {}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "caiconform.runner.zygote", str(theirs.fileno())],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
        theirs.close()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self, args: list[str], env: dict[str, str], stderr: int) -> ZygoteProcess:
        """A fork server (`python -m caiconform.runner.process ARGS`) forked by the zygote, on
        new pipes and `stderr`. Raises OSError when the zygote cannot be asked (it died)."""
        child_in, to_child = os.pipe()
        from_child, child_out = os.pipe()
        try:
            with self._lock:
                message = json.dumps({"args": args, "env": env}).encode()
                socket.send_fds(self._sock, [message], [child_in, child_out, stderr])
                pid = None
                deadline = time.monotonic() + SPAWN_TIMEOUT_S
                while pid is None:
                    left = max(0.0, deadline - time.monotonic())
                    if not select.select([self._sock], [], [], left)[0]:
                        self.close()  # a late answer would be taken for the next spawn's
                        raise OSError(f"the zygote did not fork within {SPAWN_TIMEOUT_S:g} s")
                    pid = self._take(self._receive(block=True))
        except (OSError, ValueError):
            for fd in (to_child, from_child):
                os.close(fd)
            raise
        finally:
            os.close(child_in)
            os.close(child_out)
        return ZygoteProcess(self, pid, os.fdopen(to_child, "wb"), os.fdopen(from_child, "rb"))

    def _receive(self, block: bool) -> dict[str, Any] | None:
        flags = 0 if block else socket.MSG_DONTWAIT
        try:
            data = self._sock.recv(_MESSAGE, flags)
        except BlockingIOError:
            return None
        if not data:
            raise OSError("the zygote has gone")
        return json.loads(data)

    def _take(self, message: dict[str, Any] | None) -> int | None:
        """File an exit notice; return the pid a spawn answer carries."""
        if message is None:
            return None
        if "error" in message:
            raise OSError(f"the zygote could not fork: {message['error']}")
        if "exit" in message:
            self._exits[int(message["exit"])] = int(message["status"])
            return None
        return int(message["pid"])

    def status(self, pid: int) -> int | None:
        """The exit status the zygote reported for `pid` (None: none yet)."""
        with self._lock:
            with contextlib.suppress(OSError, ValueError):
                while (message := self._receive(block=False)) is not None:
                    self._take(message)
            return self._exits.get(pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


class ZygoteProcess:
    """A fork server the zygote forked, as `pool.Worker` uses a `subprocess.Popen`."""

    def __init__(self, zygote: Zygote, pid: int, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode: int | None = None
        self._zygote = zygote
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except OSError:  # already gone (and reaped)
            self._pidfd = None

    def _ended(self) -> bool:
        if self._pidfd is None:
            return True
        ready, _, _ = select.select([self._pidfd], [], [], 0)
        return bool(ready)

    def poll(self) -> int | None:
        """None while the server runs, else its exit status. A running server is seen from
        its pidfd alone: the zygote is asked (under a lock every slot shares, a socket read)
        only once the process has ended; `pool.Worker.alive` polls twice per example, so asking the
        zygote each time would take a share of the run parent's GIL."""
        if self.returncode is not None:
            return self.returncode
        if not self._ended():
            return None
        status = self._zygote.status(self.pid)
        deadline = time.monotonic() + _STATUS_WAIT_S
        while status is None and time.monotonic() < deadline:
            time.sleep(0.01)
            status = self._zygote.status(self.pid)
        self.returncode = UNKNOWN_STATUS if status is None else status
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"zygote child {self.pid}", timeout or 0)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode


# -- the zygote itself ---------------------------------------------------------------------
def _become(request: dict[str, Any], fds: list[int], zygote: int) -> None:
    """In the forked child: the slot's fork server on the passed pipes and stderr."""
    os.setsid()
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    from caiconform.runner.process import PARENT_ENV
    from caiconform.runner.process import main as worker_main

    os.environ.clear()
    os.environ.update(request["env"])
    os.environ[PARENT_ENV] = str(zygote)  # the worker dies with its parent: this process
    code = 1
    try:
        code = worker_main(list(request["args"]))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:
        print(f"zygote child: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        os._exit(code or 0)


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            sock.send(json.dumps({"exit": pid, "status": code}).encode())


def serve(sock: socket.socket) -> None:
    """Fork a fork server per request until the parent closes the socket."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    zygote = os.getpid()
    while True:
        _reap(sock)
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            continue
        try:
            message, fds, _, _ = socket.recv_fds(sock, _MESSAGE, 3)
        except OSError:
            return
        if not message:
            return
        try:
            request = json.loads(message)
            pid = os.fork()
        except (OSError, ValueError) as exc:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
            continue
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (wake_r, wake_w, sock.fileno()):
                with contextlib.suppress(OSError):
                    os.close(fd)
            _become(request, fds, zygote)
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"pid": pid}).encode())


def main(argv: list[str] | None = None) -> int:
    import gc

    from caiconform.runner.forkserver import preload_from_env
    from caiconform.runner.process import set_up_process

    args = sys.argv[1:] if argv is None else argv
    sock = socket.socket(fileno=int(args[0]))
    set_up_process()
    preload_from_env()  # import-only, as a fork server's own preload
    gc.freeze()
    serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
