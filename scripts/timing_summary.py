"""Per run directory: the start, when the first and last examples ran, the workers' time by
phase (`results.jsonl` `timing`, seconds summed over workers), the first examples of new worker
children (and per library those and the later examples over 50 ms: compiles and first uses),
the zygote's imports one by one (`workers/zygote.log`), crashes and poisoned contexts, the cells' shrinking and confirming (`cells.jsonl`),
the parent's CPU (run.json `parent`), the slots' time from the first example to the last
split into examples, shrinking, confirming and the rest, each family's time and worker CPU per
example, the workers' preemptions, and how often a slot went from a cell
of a family whose workers have one hardware queue (`SINGLE_QUEUE`) to one of another family or
back (each change replaces the slot's forked workers; issue 11), the stretches over 1 s in
which no example ended anywhere (every slot stalled at once: a GPU-wide pause), and the
slots' time in cuda.cccl examples over 1 s (waiting for or making a build), and, when the
run's workers had the ioctl clock preloaded (caiconform.runner.ioctls), the NVIDIA driver's
ioctls' time per example by family and by library.
Usage: python scripts/timing_summary.py NAME=RUN_DIR ... > timing-summary.txt
"""

from __future__ import annotations

import collections
import datetime
import json
import sys
from pathlib import Path


def _stamp(record: dict, start: float) -> float:
    return datetime.datetime.fromisoformat(record["time"]).timestamp() - start


def _kind_changes(ran: list[dict], start: float) -> int:
    """Changes between one-queue families' cells and the others', summed over slots, in the
    order the records were journaled."""
    from caiconform.checks import load
    from caiconform.spec.families import FAMILIES

    single = {f for f in FAMILIES if getattr(load(f), "SINGLE_QUEUE", False)}
    last: dict[str, bool] = {}
    changes = 0
    for record in sorted(ran, key=lambda r: _stamp(r, start)):
        slot, kind = record["worker"].split("/")[0], record["check"] in single
        changes += slot in last and last[slot] != kind
        last[slot] = kind
    return changes


def _pauses(times: list[float]) -> list[tuple[float, float]]:
    """(start, seconds) of each stretch over 1 s between two examples' ends, run-wide."""
    return [(a, b - a) for a, b in zip(times, times[1:], strict=False) if b - a > 1.0]


def _wall_phases(timing: dict) -> dict:
    """The phases of a slot's wall time (`*_s`), without what the worker's CPUs spent in them
    (`cpu_*_s`), its ioctls' time (`*ioctl_s`, inside the phases) or its preemptions, which
    are not more time of the slot."""
    return {
        k: v
        for k, v in timing.items()
        if k.endswith("_s") and not k.startswith("cpu_") and not k.endswith("ioctl_s")
    }


def _ioctl_lines(ran: list[dict], first: list[dict]) -> list[str]:
    """With the ioctl clock preloaded (caiconform.runner.ioctls): per family and per library
    (producer or consumer, the ten with the most), the NVIDIA driver ioctls' ms and calls per
    example, and their share of the example's execute + health time."""
    clocked = [r for r in ran if "nv_ioctl_s" in r["timing"]]
    if not clocked:
        return []
    out = []
    for title, keys in (
        ("family", lambda r: [r["check"]]),
        ("library", lambda r: {r["producer"], r["consumer"]} - {None}),
    ):
        s: collections.Counter = collections.Counter()
        calls: collections.Counter = collections.Counter()
        wall: collections.Counter = collections.Counter()
        n: collections.Counter = collections.Counter()
        for record in clocked:
            t = record["timing"]
            for key in keys(record):
                s[key] += t["nv_ioctl_s"]
                calls[key] += t.get("nv_ioctl_n", 0)
                wall[key] += t.get("execute_s", 0.0) + t.get("health_s", 0.0)
                n[key] += 1
        ranked = sorted(s, key=lambda k: -s[k])[:10]
        out.append(
            f"   NVIDIA ioctls per example by {title}, ms (calls; share of the example's time): "
            + "; ".join(
                f"{k} {1000 * s[k] / n[k]:.2f} ({calls[k] / n[k]:.0f}; "
                f"{100 * s[k] / max(wall[k], 1e-9):.0f} %)"
                for k in ranked
            )
        )
    total = sum(r["timing"]["nv_ioctl_s"] for r in clocked)
    wall_all = sum(
        r["timing"].get("execute_s", 0.0) + r["timing"].get("health_s", 0.0) for r in clocked
    )
    fresh = sum(r["timing"].get("nv_ioctl_s", 0.0) for r in first)
    out.append(
        f"   NVIDIA ioctls in examples: {total:.1f} s of {wall_all:.1f} s "
        f"({100 * total / max(wall_all, 1e-9):.0f} %); in new children's first examples "
        f"(their CUDA contexts made): {fresh:.1f} s"
    )
    return out


def summary(name: str, path: Path) -> list[str]:
    run = json.loads((path / "run.json").read_text())
    lines = _read_results(path).splitlines()
    ran = [r for r in map(json.loads, lines) if r.get("timing") and r.get("worker")]
    total: collections.Counter = collections.Counter()
    for record in ran:
        total.update(_wall_phases(record["timing"]))
    first: dict[str, dict] = {}
    for record in sorted(ran, key=lambda r: r["seq"]):
        first.setdefault(record["worker"], record)
    fresh: collections.Counter = collections.Counter()
    for record in first.values():
        if record["outcome"] != "crash":
            fresh.update(_wall_phases(record["timing"]))
    by_library = _by_library(ran, {id(r) for r in first.values()})
    times = sorted(_stamp(r, run["created"]) for r in ran)
    outcomes = collections.Counter(r["outcome"] for r in ran)
    spin = run.get("spin_calibration", {}).get("spin_us")
    cells = [json.loads(line) for line in (path / "cells.jsonl").read_text().splitlines()]
    shrinks = [s for c in cells for s in c.get("shrinks", [])]
    confirm_s = sum(c.get("timing", {}).get("confirm_s", 0.0) for c in cells)

    shrink_s = sum(s["spent_s"] for s in shrinks)
    slots = len({r["worker"].split("/")[0] for r in ran})
    # what the slots' time from the first example to the last went to: examples, shrinking,
    # confirming, and the rest (the parent's turn between a slot's requests, idle slots)
    capacity = slots * (times[-1] - times[0])
    rest = capacity - sum(total.values()) - shrink_s - confirm_s

    pauses = _pauses(times)
    cccl_slow = sum(
        r["duration_s"]
        for r in ran
        if "cuda.cccl" in (r["producer"], r["consumer"]) and (r["duration_s"] or 0) > 1
    )

    def phases(counter: collections.Counter) -> str:
        return ", ".join(f"{k} {v:.0f}" for k, v in sorted(counter.items()))

    # per family: an example's execute + health time and the worker CPU inside it, in ms
    family_s: collections.Counter = collections.Counter()
    family_cpu: collections.Counter = collections.Counter()
    family_n: collections.Counter = collections.Counter()
    for record in ran:
        t = record["timing"]
        family_s[record["check"]] += t.get("execute_s", 0.0) + t.get("health_s", 0.0)
        family_cpu[record["check"]] += t.get("cpu_user_s", 0.0) + t.get("cpu_system_s", 0.0)
        family_n[record["check"]] += 1
    per_family = "; ".join(
        f"{f} {1000 * family_s[f] / family_n[f]:.1f} ({1000 * family_cpu[f] / family_n[f]:.1f})"
        for f in sorted(family_s, key=lambda f: -family_s[f])
    )
    preempted = sum(r["timing"].get("preempted", 0) for r in ran)

    return [
        f"== {name}: startup {run.get('startup')}",
        f"   first example {times[0]:.1f} s after the start, last {times[-1]:.1f} s; "
        f"spin {spin} us",
        f"   workers' time (s): {phases(total)}; sum {sum(total.values()):.0f}",
        f"   new children {len(first)}; their first examples (crashes aside): {phases(fresh)}",
        f"   per library (the consumer, else the producer), new children / their first examples'"
        f" s / later examples over {_SLOW_S * 1000:.0f} ms / their s: {by_library}",
        f"   crash {outcomes['crash']}, poisoned {outcomes['poisoned']}",
        f"   shrinking {shrink_s:.0f} s in {len(shrinks)} classes "
        f"({sum(bool(s.get('budget_out')) for s in shrinks)} to the budget); "
        f"confirming {confirm_s:.0f} s",
        f"   parent {run.get('parent')}",
        f"   slots' changes between one-queue families and the others: "
        f"{_kind_changes(ran, run['created'])}",
        f"   {slots} slots x first to last example: {capacity:.0f} s, of which examples "
        f"{sum(total.values()):.0f}, shrinking {shrink_s:.0f}, confirming {confirm_s:.0f}, "
        f"the rest {rest:.0f}",
        f"   no example ended anywhere for over 1 s: {len(pauses)} time(s), "
        f"{sum(p for _, p in pauses):.1f} s"
        + "".join(f"; {p:.1f} s from {a:.1f} s" for a, p in pauses),
        f"   cuda.cccl examples over 1 s: {cccl_slow:.0f} s of the slots' time",
        f"   zygote: {_zygote_line(path)}",
        f"   ms per example by family, execute + health (worker CPU): {per_family}",
        f"   workers preempted {preempted} times ({preempted / max(1, len(ran)):.2f} per example)",
        *_ioctl_lines(ran, list(first.values())),
    ]


#: an example past its child's first that took longer is counted apart: a compile, a library's
#: first use of something in that process (`_by_library`)
_SLOW_S = 0.05


def _by_library(ran: list[dict], firsts: set[int]) -> str:
    """Per library (an example's consumer, else its producer), the new children's first
    examples and the later examples over _SLOW_S: where replacements and first uses cost."""
    rows: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0, 0.0])
    for record in ran:
        row = rows[str(record.get("consumer") or record.get("producer"))]
        spent = sum(_wall_phases(record["timing"]).values())
        if id(record) in firsts:
            row[0] += 1
            row[1] += spent
        elif spent > _SLOW_S:
            row[2] += 1
            row[3] += spent
    ranked = sorted(rows.items(), key=lambda item: -(item[1][1] + item[1][3]))
    return "; ".join(
        f"{name} {n:.0f}/{s:.1f}/{m:.0f}/{t:.1f}" for name, (n, s, m, t) in ranked if n or m
    )


def _zygote_line(run_dir: Path) -> str:
    """What the zygote's preload took, by import (workers/zygote.log), or that none ran."""
    try:
        text = (run_dir / "workers" / "zygote.log").read_text(errors="replace")
    except OSError:
        return "no log"
    lines = [line for line in text.splitlines() if line.startswith("fork server: preloaded")]
    return lines[-1].split(" libraries ", 1)[-1] if lines else "no preload line"


def _read_results(path: Path) -> str:
    """results.jsonl, or the gzipped copy a published run keeps."""
    if not (path / "results.jsonl").is_file() and (path / "results.jsonl.gz").is_file():
        import gzip

        return gzip.decompress((path / "results.jsonl.gz").read_bytes()).decode()
    return (path / "results.jsonl").read_text()


def main() -> None:
    if not sys.argv[1:]:
        sys.exit("usage: python scripts/timing_summary.py NAME=RUN_DIR ...")
    for argument in sys.argv[1:]:
        name, _, path = argument.partition("=")
        if not path or not (Path(path) / "run.json").is_file():
            sys.exit(
                f"timing_summary: {argument!r}: want NAME=RUN_DIR, a run directory with run.json"
            )
        print("\n".join(summary(name, Path(path))))


if __name__ == "__main__":
    main()
