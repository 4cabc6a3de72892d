"""What a journal record holds: the keys that place it, the cell it belongs to, its coverage
labels, the record of a family that could not run, and the rejection meaning.

A record is one line of `results.jsonl` (docs/internals.md, "Outcomes and journal"). The
runner writes records, the report and the verdict read them; both sides take these shapes
from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from caiconform.results.outcome import OUTCOMES, SKIP

__all__ = [
    "EXPECT_REJECTION",
    "LABELS",
    "REQUIRED_KEYS",
    "cell_key",
    "coverage_of_params",
    "family_skip_record",
    "record_problem",
]

#: `Result.expected` of an exchange whose right answer is a clean rejection: a `rejected`
#: outcome carrying it is the consumer doing the right thing, not an interop gap.
EXPECT_REJECTION = "a clean rejection (an exception)"

#: Keys a journal record must carry for the matrix to place it.
REQUIRED_KEYS = ("run_id", "seq", "check", "outcome")

#: the coverage labels, in the order a combination is written (last the memory kind the
#: producer allocated, `checks._memory`)
LABELS = (
    "layout",
    "dtype",
    "order",
    "scenario",
    "mutation",
    "mask",
    "version",
    "object",
    "entry",
    "memory",
)

#: the type each placing key must have: JSON's spelling of it, and the Python types it reads as
_KEY_TYPES: dict[str, tuple[str, tuple[type, ...]]] = {
    "run_id": ("a string", (str,)),
    "seq": ("an integer", (int,)),
    "check": ("a string", (str,)),
    "producer": ("a string or null", (str, type(None))),
    "consumer": ("a string or null", (str, type(None))),
    "rule": ("a string or null", (str, type(None))),
}


def record_problem(record: Any) -> str | None:
    """Why `record` cannot be a journal record (not an object, a placing key missing or of the
    wrong type, an unknown outcome), or None when it can."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        return f"record lacks {', '.join(missing)}"
    for key, (spelled, types) in _KEY_TYPES.items():
        value = record.get(key)
        if key in record and (type(value) is bool or not isinstance(value, types)):
            return f"{key} is {_json_type(value)}, expected {spelled}"
    if not isinstance(record["outcome"], str) or record["outcome"] not in OUTCOMES:
        return f"outcome {_short(record['outcome'])} is not one of {', '.join(OUTCOMES)}"
    return None


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names.update({list: "an array", dict: "an object", type(None): "null"})
    return names.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value)[:40]
    return text if len(text) <= 40 else text[:37] + "..."


def cell_key(record: Mapping[str, Any]) -> str:
    """A record's cell as the runner names it (`cells.jsonl`): check/producer/consumer, '-'
    for a role the cell does not have."""
    return f"{record.get('check')}/{record.get('producer') or '-'}/{record.get('consumer') or '-'}"


def coverage_of_params(params: dict) -> dict[str, str]:
    """Coverage labels (layout kind, dtype class, byte order, stream scenario, consumer entry
    point) read from a drawn example's params, for the report's coverage tables; only the
    labels the params name."""
    from caiconform.spec.dtypes import byte_order, dtype_class

    out: dict[str, str] = {}
    typestr = params.get("typestr")
    if isinstance(typestr, str):
        out["dtype"], out["order"] = dtype_class(typestr), byte_order(typestr)
    layout = params.get("layout")
    shape = layout.get("shape") if isinstance(layout, dict) else params.get("shape")
    if isinstance(layout, dict):
        out["layout"] = str(layout.get("kind", "C"))
        if out["layout"] == "C" and layout.get("strides") is not None:
            out["layout"] = "C-strides"
    if isinstance(shape, list):
        if not shape:
            out["layout"] = "0d"
        elif 0 in shape:
            out["layout"] = "zero-size"
        else:
            out.setdefault("layout", "C")
    scenario = params.get("stream_scenario")
    out["scenario"] = scenario if isinstance(scenario, str) else "none"
    memory = params.get("memory")  # the memory kind (`checks._memory`); device unless drawn
    out["memory"] = memory if isinstance(memory, str) else "device"
    entry = params.get("entry")
    if isinstance(entry, str):
        out["entry"] = entry
    return out


def family_skip_record(family: str, reason: str) -> dict[str, Any]:
    """The one record of a family whose module could not be imported."""
    return {
        "producer": None,
        "consumer": None,
        "check": family,
        "rule": None,
        "outcome": SKIP,
        "params": {},
        "message": reason,
        "seen": None,
        "expected": None,
        "repro": None,
        "duration_s": 0.0,
        "worker": None,
        "index": None,
        "shrunk": False,
    }
