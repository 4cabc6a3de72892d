"""Reproducer scripts: one standalone Python file per non-pass example, in the run's `repro/`.

The check family knows how to show its problem with the libraries alone, so its
`repro(params, producer, consumer) -> str` hook writes the script body; when a family has none
(or the hook fails), a generic script calls the family's `execute` with the recorded params,
which reproduces crashes and hangs too because it runs in the script's own process.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from caiconform.rundir import REPRO_DIR

__all__ = ["script_for", "write_repro", "repro_name"]


def _safe(text: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text or "-")


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def repro_name(check: str, producer: str | None, consumer: str | None, tag: str) -> str:
    """The script's path relative to the run directory (`repro/<check>__<p>__<c>__<tag>.py`)."""
    return f"{REPRO_DIR}/{_safe(check)}__{_safe(producer)}__{_safe(consumer)}__{_safe(tag)}.py"


def _generic(module: str, params: dict, producer: str | None, consumer: str | None) -> str:
    return (
        "import json\n\n"
        f"from {module} import execute\n\n"
        f"PARAMS = json.loads({json.dumps(json.dumps(params, sort_keys=True))})\n"
        f"print(execute(PARAMS, {producer!r}, {consumer!r}))\n"
    )


def script_for(family: ModuleType, record: dict[str, Any]) -> str:
    """The reproducer for one record: a comment saying what the run saw, then the family's
    script (or the generic one)."""
    params, producer, consumer = record["params"], record["producer"], record["consumer"]
    rule = f" [{record['rule']}]" if record.get("rule") else ""
    header = [
        f"# caiconform reproducer: check {record['check']}, producer {producer}, "
        f"consumer {consumer}",
        f"# the run saw: {record['outcome']}{rule}: {_one_line(record.get('message'))}".rstrip(),
    ]
    hook = getattr(family, "repro", None)
    body = None
    if hook is not None:
        try:
            body = hook(params, producer, consumer)
        except Exception as exc:  # a broken hook must not cost the reproducer
            header.append(f"# (the family's repro hook failed: {type(exc).__name__}: {exc})")
    if not body:
        body = _generic(family.__name__, params, producer, consumer)
    return "\n".join(header) + "\n" + _memory_kind(params) + body


def _memory_kind(params: Any) -> str:
    """Lines making the example's memory kind the one its producer allocates, as the worker
    did (`caiconform.cuda.memkinds`); none for device memory."""
    kind = params.get("memory") if isinstance(params, dict) else None
    if not isinstance(kind, str) or kind == "device":
        return ""
    return (
        "from caiconform.cuda.memkinds import use_kind\n\n"
        f"use_kind({kind!r})  # the producer allocates this memory kind, as in the run\n\n"
    )


def write_repro(run_dir: Path, family: ModuleType, record: dict[str, Any], tag: str) -> str:
    """Write the reproducer of `record` and return its path relative to `run_dir`."""
    relative = repro_name(record["check"], record["producer"], record["consumer"], tag)
    path = run_dir / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script_for(family, record))
    return relative
