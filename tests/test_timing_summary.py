"""scripts/timing_summary.py on a tiny synthetic run directory: what issue 27's analyses read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _record(seq: int, check: str, worker: str, execute: float, cpu: float, preempted: int):
    return {
        "seq": seq,
        "check": check,
        "worker": worker,
        "outcome": "pass",
        "time": f"2026-11-25T20:00:{10 + seq:02d}.000+00:00",
        "producer": "reference",
        "consumer": "cupy",
        "duration_s": execute,
        "timing": {
            "execute_s": execute,
            "health_s": 0.001,
            "transfer_s": 0.0,
            "cpu_user_s": cpu,
            "cpu_system_s": 0.0,
            "preempted": preempted,
        },
    }


def _run_dir(tmp_path: Path, records: list[dict], **meta) -> Path:
    """A run directory of one roundtrip cell and `records`, its run.json `meta`, created at
    2026-11-25T20:00:00Z."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"created": 1795636800.0, **meta}))
    (run / "cells.jsonl").write_text(json.dumps({"cell": "roundtrip/reference/cupy"}) + "\n")
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


def _summary(run: Path) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [sys.executable, "scripts/timing_summary.py", f"x={run}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out


def test_it_prints_each_familys_time_and_cpu_per_example(tmp_path):
    records = [
        _record(1, "roundtrip", "w0/11", 0.009, 0.004, 1),
        _record(2, "roundtrip", "w1/12", 0.011, 0.006, 0),
        _record(3, "streams", "w0/11", 0.019, 0.021, 1),
    ]
    run = _run_dir(tmp_path, records, startup={"startup_s": 1.0})
    out = _summary(run)
    family = next(line for line in out.stdout.splitlines() if "by family" in line)
    # the family with the most time first (roundtrip, 2 x 11 ms), each per example: roundtrip
    # 10 + 1 ms health and 5 ms CPU on average, streams 19 + 1 ms and 21 ms CPU
    assert family.endswith("roundtrip 11.0 (5.0); streams 20.0 (21.0)"), family
    assert "workers preempted 2 times (0.67 per example)" in out.stdout
    assert "   zygote: no log" in out.stdout
    (run / "workers").mkdir()
    (run / "workers" / "zygote.log").write_text(
        "fork server: preloaded 2 check module(s) and libraries cupy, torch in 3.10 s "
        "(check modules 0.20, cupy 0.90, torch 2.00)\n"
    )
    zygote = next(line for line in _summary(run).stdout.splitlines() if "zygote:" in line)
    assert zygote.endswith("cupy, torch in 3.10 s (check modules 0.20, cupy 0.90, torch 2.00)")


def test_it_prints_the_nvidia_ioctls_per_family_and_library_when_clocked(tmp_path):
    records = [
        _record(1, "roundtrip", "w0/11", 0.009, 0.004, 0),
        _record(2, "roundtrip", "w0/11", 0.009, 0.004, 0),
        _record(3, "streams", "w1/12", 0.019, 0.010, 0),
    ]
    for record, (spent, calls) in zip(records, [(0.006, 40), (0.002, 10), (0.002, 5)], strict=True):
        record["timing"].update(ioctl_s=spent, nv_ioctl_s=spent, nv_ioctl_n=calls)
    run = _run_dir(tmp_path, records)
    out = _summary(run)
    lines = out.stdout.splitlines()
    family = next(line for line in lines if "NVIDIA ioctls per example by family" in line)
    # roundtrip: (6 + 2) / 2 = 4 ms and 25 calls per example, 4 of 10 ms execute + health
    assert family.endswith("roundtrip 4.00 (25; 40 %); streams 2.00 (5; 10 %)"), family
    library = next(line for line in lines if "by library" in line)
    assert "cupy 3.33 (18; 25 %)" in library, library
    # 10 ms of ioctls in 40 ms of examples
    assert "NVIDIA ioctls in examples: 0.0 s of 0.0 s (25 %)" in out.stdout
    # the ioctls are inside the examples' time, not another phase of the slots
    assert "ioctl_s" not in next(line for line in lines if "workers' time" in line)


def test_it_prints_new_childrens_first_examples_and_slow_later_ones_by_library(tmp_path):
    records = [
        _record(1, "roundtrip", "w0/11", 0.399, 0.004, 0),  # w0/11's first: 0.4 s
        _record(2, "roundtrip", "w0/11", 0.009, 0.004, 0),  # later, quick: not counted
        _record(3, "roundtrip", "w0/11", 0.199, 0.004, 0),  # later, slow: 0.2 s
        _record(4, "streams", "w1/12", 0.099, 0.010, 0),  # w1/12's first: 0.1 s
    ]
    records[3]["consumer"] = "torch"
    run = _run_dir(tmp_path, records)
    line = next(ln for ln in _summary(run).stdout.splitlines() if "per library" in ln)
    # the library with the most such time first: cupy one child (0.4 s) and one slow (0.2 s)
    assert line.endswith(": cupy 1/0.4/1/0.2; torch 1/0.1/0/0.0"), line
