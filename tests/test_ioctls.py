"""caiconform.runner.ioctls and the ioctl clock it reads (benchmarks/ioctl_clock): issue 27's
measure of the time workers spend in the NVIDIA driver's ioctls."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from caiconform.runner import ioctls

ROOT = Path(__file__).resolve().parents[1]


def test_without_the_clock_nothing_is_measured_or_journaled():
    assert ioctls.spent(None, (1, 1, 1, 1)) == {}
    assert ioctls.spent((1, 1, 1, 1), None) == {}


def test_spent_is_the_difference_of_two_readings():
    before = (1_000_000, 3, 500_000, 2)
    after = (4_000_000, 10, 2_500_000, 6)
    assert ioctls.spent(before, after) == {"ioctl_s": 0.003, "nv_ioctl_s": 0.002, "nv_ioctl_n": 4}


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler to build the clock")
def test_the_preloaded_clock_counts_a_processs_ioctls(tmp_path):
    library = tmp_path / ioctls.LIBRARY
    subprocess.run(
        [
            "gcc",
            "-O2",
            "-shared",
            "-fPIC",
            "-o",
            str(library),
            str(ROOT / "benchmarks/ioctl_clock/ioctl_clock.c"),
            "-ldl",
        ],
        check=True,
        timeout=120,
    )
    code = (
        "import fcntl, os, termios\n"
        "from caiconform.runner import ioctls\n"
        "before = ioctls.counters()\n"
        "r, _ = os.pipe()\n"
        "for _ in range(50):\n"
        "    fcntl.ioctl(r, termios.FIONREAD, b'    ')\n"
        "print(before[1], ioctls.counters()[1], ioctls.spent(before, ioctls.counters()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "LD_PRELOAD": str(library)},
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    before, after, spent = out.stdout.split(maxsplit=2)
    assert int(after) - int(before) >= 50
    # a pipe is not one of the NVIDIA driver's files
    assert "'nv_ioctl_s': 0.0, 'nv_ioctl_n': 0" in spent
