"""Where a run's worker processes wait (issue 27): every 20 ms, the main thread of each
process under the run (`/proc/PID/stat` state, `/proc/PID/syscall`, the file an ioctl is on),
counted until SIGTERM, then one summary: per state and system call, how many samples, and
per sample how many children were busy (not blocked reading their pipe) and how many of those
were running. A host-wide wait shows as busy children blocked in the same call (an nvidia
ioctl, a futex, a page fault in D state) more often as workers are added.
Usage: python scripts/proc_sample.py ROOT_PID OUT.txt   (stop it with SIGTERM)
"""

from __future__ import annotations

import collections
import os
import signal
import sys
import time

SYSCALLS = {
    0: "read",
    7: "poll",
    16: "ioctl",
    23: "select",
    35: "nanosleep",
    45: "recvfrom",
    47: "recvmsg",
    61: "wait4",
    202: "futex",
    230: "clock_nanosleep",
    232: "epoll_wait",
    270: "pselect6",
    271: "ppoll",
    281: "epoll_pwait",
    9: "mmap",
    11: "munmap",
    10: "mprotect",
    1: "write",
    3: "close",
    57: "fork",
    56: "clone",
    435: "clone3",
}
IDLE = {"read", "recvfrom", "recvmsg", "wait4", "epoll_wait", "select", "poll", "accept"}


def children(root: int) -> list[int]:
    """Every descendant of root (via /proc/*/stat's parent pid)."""
    parent: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out.extend(kids)
        todo.extend(kids)
    return out


def where(pid: int, fds: dict) -> tuple[str, str] | None:
    """(state, call) of pid's main thread; call names the file of an ioctl or read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/syscall") as f:
            words = f.read().split()
    except OSError:
        return None
    if not words or words[0] == "running":
        return state, "running"
    if words[0] == "-1":
        return state, "user"  # in user space or a fault
    nr = int(words[0])
    call = SYSCALLS.get(nr, f"sys{nr}")
    if call in {"ioctl", "read", "write"}:
        fd = int(words[1], 16)
        key = (pid, fd)
        if key not in fds:
            try:
                fds[key] = os.readlink(f"/proc/{pid}/fd/{fd}").split("/")[-1][:24]
            except OSError:
                fds[key] = "?"
        target = fds[key]
        if target.startswith("pipe:") or target.startswith("socket:"):
            target = target.split(":")[0]
        call += f"({target}" + (f",0x{int(words[2], 16) & 0xFF:02x})" if call == "ioctl" else ")")
    return state, call


def main() -> None:
    root, path = int(sys.argv[1]), sys.argv[2]
    counts: collections.Counter = collections.Counter()
    busy_hist: collections.Counter = collections.Counter()
    fds: dict = {}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    samples = 0
    pids: list[int] = []
    last_scan = 0.0
    while not stop:
        now = time.monotonic()
        if now - last_scan > 0.5:
            pids, last_scan = children(root), now
        busy = running = 0
        for pid in pids:
            w = where(pid, fds)
            if w is None:
                continue
            state, call = w
            counts[(state, call)] += 1
            if call.split("(")[0] not in IDLE or call.startswith("read(nvidia"):
                busy += 1
                running += state == "R"
        busy_hist[(busy, running)] += 1
        samples += 1
        time.sleep(0.02)
    total = sum(counts.values())
    with open(path, "w") as out:
        out.write(f"{samples} samples; process-samples by (state, main thread's call):\n")
        for (state, call), n in counts.most_common(40):
            out.write(f"  {n:8d} {100 * n / total:5.1f} %  {state} {call}\n")
        mean_busy = sum(b * n for (b, _), n in busy_hist.items()) / max(samples, 1)
        mean_run = sum(r * n for (_, r), n in busy_hist.items()) / max(samples, 1)
        out.write(f"busy children per sample {mean_busy:.2f}, of them running {mean_run:.2f}\n")


if __name__ == "__main__":
    main()
