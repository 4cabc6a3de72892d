"""The entry point of the runner's worker processes, and what every process the runner starts
does first.

`python -m caiconform.runner.process [--health-hook MODULE:FUNCTION ...] [--fork]` (started by
`pool.Worker`): the process sets itself up (`set_up_process`: it dies with its parent, writes no
core dumps, dumps tracebacks on a fatal signal and imports what the parent imports), takes fds 0
and 1 for the protocol, and serves requests, as a worker (`worker.serve`) or, with `--fork`, as a
fork server (`forkserver.ForkServer`) whose forked children are workers. The zygote
(`runner.zygote`) sets itself up the same way and runs `main` in each fork server it forks.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import os
import sys
from typing import BinaryIO

from caiconform.runner.forkserver import ForkServer
from caiconform.runner.worker import serve

__all__ = ["main", "no_core_dumps", "set_up_process", "PATH_ENV", "PARENT_ENV"]

#: os.pathsep-joined sys.path of the parent, so the worker imports what the parent imports
PATH_ENV = "CAICONFORM_WORKER_PATH"

#: pid of the parent; the worker exits when it is gone
PARENT_ENV = "CAICONFORM_WORKER_PARENT"


def _exit_with_parent() -> None:
    """Die with the parent (Linux), so a killed run leaves no worker behind, even a hung one.
    The kernel sends the signal when the *thread* that started the worker ends, so the parent
    keeps a worker inside the thread that started it."""
    parent = os.environ.get(PARENT_ENV)
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    if parent and os.getppid() != int(parent):
        os._exit(0)


def _protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """Take fds 0 and 1 for the protocol; point fd 0 at /dev/null and fd 1 at stderr."""
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return proto_in, proto_out


def no_core_dumps() -> None:
    """A worker that crashes writes no core file: the process is made non-dumpable
    (PR_SET_DUMPABLE 0, which the kernel checks before any core dump, a `core_pattern` pipe
    included) and RLIMIT_CORE is 0: dumping a process that maps a CUDA context is slow, and
    the parent waits for a crashed worker's end. Inherited by forked children."""
    import resource

    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_dumpable = 4
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0)


def set_up_process() -> None:
    """What every process the runner starts does first (a worker, a fork server, the zygote):
    die with its parent, write no core dumps, dump tracebacks on a fatal signal, and import
    what the parent imports (`PATH_ENV`)."""
    _exit_with_parent()
    no_core_dumps()
    faulthandler.enable()
    extra = os.environ.get(PATH_ENV, "")
    sys.path[:0] = [p for p in extra.split(os.pathsep) if p and p not in sys.path]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="caiconform.runner.process")
    parser.add_argument("--health-hook", action="append", default=[], metavar="MODULE:FUNCTION")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="be a fork server: import, never run, and fork the processes that run (forkserver)",
    )
    args = parser.parse_args(argv)
    set_up_process()
    proto_in, proto_out = _protocol_streams()
    if args.fork:
        ForkServer(proto_in.fileno(), proto_out.fileno(), args.health_hook).serve()
    else:
        serve(proto_in, proto_out, args.health_hook)
    return 0


if __name__ == "__main__":
    sys.exit(main())
