"""Probe how the installed libraries behave through their caiconform adapters; JSONL out.

Not a test: a record of observations for a report (`reports/README.md`). Sections run in child
processes (several at once), each writing one JSON line per observation and a "start" line
before each exchange, so a library that takes its process down still leaves a trace of which
exchange did it.

    python tests/gpu/probe_adapters.py OUTDIR

Sections: `env` (versions, availability), `exports` (the CAI dict each producer exports, per
layout and stream scenario), and one `consume:<name>` per consumer (every producer x layout,
the dtype table, read-only input, and what the consumer reads when it is handed an object with
pending work, before anything else synchronizes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from _cases import DTYPES, layouts, sample_values

from caiconform.adapters import registry
from caiconform.adapters.base import SkipExchange
from caiconform.spec.scenarios import STREAM_SCENARIOS

SECTION_TIMEOUT_S = 170
PRODUCERS = ("reference", "numba", "cupy", "torch", "jax")


class Journal:
    def __init__(self, path: Path, section: str) -> None:
        self.file = path.open("a")
        self.section = section

    def write(self, **record) -> None:
        record["section"] = self.section
        self.file.write(json.dumps(record, default=str) + "\n")
        self.file.flush()


def _error(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:300]


def _describe(obj) -> dict:
    """The exported dict with the pointer reduced to 0 / nonzero and the mask summarized."""
    cai = dict(obj.__cuda_array_interface__)
    data = cai.get("data")
    if isinstance(data, tuple) and data:
        cai["data"] = ("nonzero" if data[0] else 0, data[1])
    if cai.get("mask") is not None:
        cai["mask"] = type(cai["mask"]).__name__
    cai["keys"] = sorted(cai)
    return cai


def _produce(producer, typestr, layout_name, scenario="none", **options):
    dtype = np.dtype(typestr)
    layout, axis = layouts(dtype.itemsize)[layout_name]
    values = sample_values(layout.shape, typestr, axis)
    adapter = registry.get(producer)
    obj = adapter.produce(values, layout, typestr, scenario, **options)
    return obj, values


def _compare(got, values) -> str:
    got = np.asarray(got)
    if got.shape != values.shape:
        return f"mismatch: shape {got.shape} != {values.shape}"
    if got.dtype != values.dtype:
        same = got.shape == values.shape and np.array_equal(got, values.astype(got.dtype))
        return f"mismatch: dtype {got.dtype} != {values.dtype} (values {'equal' if same else 'differ'})"
    if np.array_equal(got, values):
        return "pass"
    differ = int(np.sum(got != values))
    return f"mismatch: {differ}/{values.size} elements differ"


def _is_sentinel(got, values) -> bool:
    """True when every element holds the complement of its value's bytes (the adapters'
    sentinel: see caiconform.adapters._staging.pending_image)."""
    got = np.ascontiguousarray(got)
    if got.shape != values.shape or got.dtype != values.dtype or values.dtype.kind == "b":
        return False
    sentinel = np.invert(np.ascontiguousarray(values).view(np.uint8))
    return bool(np.array_equal(got.view(np.uint8), sentinel))


def section_env(journal: Journal) -> None:
    from caiconform.cuda.device import device_info

    journal.write(kind="device", info=device_info(0))
    for name in registry.names():
        adapter = registry.get(name)
        ok, why = adapter.available()
        journal.write(kind="adapter", name=name, version=adapter.version(), available=ok, why=why)
    try:
        from mpi4py import MPI

        journal.write(
            kind="mpi",
            library=MPI.Get_library_version().strip().splitlines()[0],
            cuda_names=[n for n in dir(MPI) if "cuda" in n.lower()],
        )
    except Exception as exc:  # recorded, not raised: this is an observation
        journal.write(kind="mpi", error=_error(exc))


def section_exports(journal: Journal) -> None:
    for producer in PRODUCERS:
        if not registry.get(producer).available()[0]:
            continue
        runs = [(lay, "none") for lay in layouts(4)] + [("C", s) for s in STREAM_SCENARIOS[1:]]
        for layout_name, scenario in runs:
            record = {"kind": "export", "producer": producer, "layout": layout_name}
            record["scenario"] = scenario
            journal.write(kind="start", **{k: v for k, v in record.items() if k != "kind"})
            try:
                obj, _ = _produce(producer, "<f4", layout_name, scenario)
                record["cai"] = _describe(obj)
            except SkipExchange as exc:
                record["skip"] = str(exc)
            except Exception as exc:  # the library's refusal is the observation
                record["error"] = _error(exc)
            journal.write(**record)
        from caiconform.cuda.device import synchronize

        synchronize()


def _exchange(
    journal: Journal, consumer, producer, typestr, layout_name, scenario="none", index=None, **kw
):
    record = {
        "index": index,
        "kind": "exchange",
        "producer": producer,
        "consumer": consumer,
        "typestr": typestr,
        "layout": layout_name,
        "scenario": scenario,
        **kw,
    }
    journal.write(**{**record, "kind": "start"})
    started = time.perf_counter()
    try:
        obj, values = _produce(producer, typestr, layout_name, scenario, **kw)
    except SkipExchange as exc:
        journal.write(**record, outcome="producer-skip", why=str(exc))
        return
    except Exception as exc:
        journal.write(**record, outcome="producer-error", why=_error(exc))
        return
    try:
        got = registry.get(consumer).consume(obj)
        outcome = _compare(got, values)
        if outcome != "pass" and scenario != "none" and _is_sentinel(got, values):
            outcome = "stale: read the sentinel, not the pending final write"
        journal.write(**record, outcome=outcome, seconds=round(time.perf_counter() - started, 4))
    except SkipExchange as exc:
        journal.write(**record, outcome="consumer-skip", why=str(exc))
    except Exception as exc:
        journal.write(**record, outcome="rejected", why=_error(exc))
    finally:
        from caiconform.cuda.device import synchronize

        synchronize()


def consume_plan() -> list[tuple]:
    """The consumer section's exchanges, in a fixed order so a restarted child can resume."""
    producers = [p for p in PRODUCERS if registry.get(p).available()[0]]
    plan: list[tuple] = []
    for producer in producers:
        for layout_name in layouts(4):
            for typestr in ("<f4", "<i2"):
                plan.append((producer, typestr, layout_name, "none", {}))
        for scenario in STREAM_SCENARIOS[1:]:
            plan.append((producer, "<i2", "sliced", scenario, {}))
    dtype_producer = "reference" if "reference" in producers else "cupy"
    plan += [(dtype_producer, typestr, "C", "none", {}) for typestr in DTYPES]
    if "reference" in producers:
        plan.append(("reference", "<f4", "C", "none", {"readonly": True}))
        plan += [("reference", "<f4", "C", "none", {"version": v}) for v in (0, 1, 2)]
    return plan


def section_consume(journal: Journal, consumer: str, start: int) -> None:
    from caiconform.cuda.device import context_healthy

    adapter = registry.get(consumer)
    ok, why = adapter.available()
    if not ok:
        journal.write(kind="unavailable", consumer=consumer, why=why)
        return
    for index, (producer, typestr, layout_name, scenario, kw) in enumerate(consume_plan()):
        if index < start:
            continue
        _exchange(journal, consumer, producer, typestr, layout_name, scenario, index=index, **kw)
        healthy, detail = context_healthy()
        if not healthy:
            journal.write(kind="poisoned", index=index, detail=detail)
            sys.exit(3)


def child(section: str, out: Path, start: int) -> None:
    journal = Journal(out / f"{section.replace(':', '-').replace('.', '_')}.jsonl", section)
    if section == "env":
        section_env(journal)
    elif section == "exports":
        section_exports(journal)
    else:
        section_consume(journal, section.split(":", 1)[1], start)
    journal.write(kind="done")


def _last_started(out: Path, section: str) -> int | None:
    part = out / f"{section.replace(':', '-').replace('.', '_')}.jsonl"
    if not part.exists():
        return None
    starts = [json.loads(line) for line in part.read_text().splitlines()]
    indices = [r["index"] for r in starts if r.get("kind") == "start" and "index" in r]
    return indices[-1] if indices else None


def parent(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    consumers = [n for n in registry.BUILTIN if "consume" in registry.get(n).capabilities]
    sections = ["env", "exports", *(f"consume:{c}" for c in consumers)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    def run(section: str) -> dict:
        """Run the section; when its child dies or poisons its context mid-exchange, record that
        exchange's fate and start a new child at the next one."""
        started = time.perf_counter()
        start, restarts, rc, tail = 0, [], None, ""
        while time.perf_counter() - started < SECTION_TIMEOUT_S:
            try:
                done = subprocess.run(
                    [sys.executable, __file__, "--child", section, str(out), str(start)],
                    capture_output=True,
                    text=True,
                    timeout=max(1.0, SECTION_TIMEOUT_S - (time.perf_counter() - started)),
                    env=env,
                    check=False,
                )
                rc, err = done.returncode, done.stderr or ""
            except subprocess.TimeoutExpired:
                rc, err = "timeout", ""
            tail = err[:800] + " ... " + err[-800:] if len(err) > 1600 else err
            last = _last_started(out, section)
            if rc == 0 or last is None or not section.startswith("consume:"):
                break
            restarts.append({"index": last, "rc": rc, "stderr": tail})
            start = last + 1
        return {
            "restarts": restarts,
            "section": section,
            "rc": rc,
            "seconds": round(time.perf_counter() - started, 1),
            "stderr_tail": tail,
        }

    with ThreadPoolExecutor(max_workers=len(sections)) as pool:
        results = list(pool.map(run, sections))
    merged = out / "probe.jsonl"
    with merged.open("w") as handle:
        for result in results:
            handle.write(json.dumps({"kind": "section", **result}) + "\n")
        for part in sorted(out.glob("*.jsonl")):
            if part != merged:
                handle.write(part.read_text())
                part.unlink()
    for result in results:
        print(result["section"], result["rc"], result["seconds"], result["stderr_tail"][-300:])


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))
    else:
        parent(Path(sys.argv[1]))
