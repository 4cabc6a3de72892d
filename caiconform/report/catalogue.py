"""The catalogue of non-conformances: a run's records grouped into findings a maintainer acts on.

A *finding group* is one library, in one role, breaking one rule with one outcome class,
whatever the pair, the check family or the example: `(library, role, rule, outcome)`. It is the
unit a report lists, a maintainer fixes once, and two runs are compared on (`compare`). Each
group carries the evidence to defend it: how many examples and cells showed it, its minimal
reproducer (the example hypothesis shrank the class to, else the smallest one), the library's
version, the *condition* under which it happens, and one message.

Who is at fault (`culprit`), read from the record, the rule and the pair:
- a record may name it (`"culprit": {"library", "role", "why"}`);
- `accepted-invalid` and a `rejected` of valid input are the consumer's (it took what it must
  refuse, or refused what it should read), except CAI-PORT-OPAQUE-EXPORT (the producer refused
  to export);
- a `fail` is the side the rule binds (`Rule.side`); a rule binding both sides is pinned on the
  third-party side of a pair with the reference, and stays ambiguous between two libraries;
- a crash, hang or poisoned context in a one-sided family is that side's; in a pair it is the
  side that also crashes opposite the reference in the same family, else ambiguous.
A group whose culprit cannot be told is kept, with `library: null` and the reason.

Conditions: the group's coverage labels (layout kind, dtype class, byte order, stream scenario,
...) are compared with those of the passing examples of the same cells: a label value seen only
in the group's examples is the condition ("dtype in {float8_e4m3fn}"). The minimal failing
example is then contrasted with its nearest passing neighbour in the same cell (fewest differing
params, seeds ignored): "fails with layout.strides=[16, 4]; passes with layout.strides=None,
the rest the same".
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from caiconform.expectations import env_versions, is_correct_rejection, lookup_version
from caiconform.runner.outcome import CRASH, HANG, PASS, POISONED, REJECTED, SKIP
from caiconform.spec.rules import RULES

__all__ = [
    "SCHEMA",
    "REFERENCE",
    "build_catalogue",
    "culprit_of",
    "group_key",
    "compare",
    "finding_records",
]

SCHEMA = "caiconform-findings/1"
REFERENCE = "reference"
#: adapter name -> the distribution its version is read from
DISTRIBUTION = {
    "numba": "numba-cuda",
    "numba-from-cai": "numba-cuda",
    "numba-kernel": "numba-cuda",
    "cuda.core": "cuda-core",
    "reference": "caiconform",
    "warp": "warp-lang",
    "rmm": "rmm",
}
_LOST = (CRASH, HANG, POISONED)
#: families whose cells have one side only (see runner.plan ROLES)
_PARAM_NOISE = ("seed", "delay_us")
#: params differences a condition may name (more is not a condition, it is another example)
_MAX_DIFF = 3


def outcome_class(record: Mapping[str, Any]) -> str | None:
    """The finding class of a record, or None when it is no finding (pass, skip, a correct
    rejection): fail, accepted-invalid, crash, hang, poisoned, rejected-valid."""
    outcome = record.get("outcome")
    if outcome in (PASS, SKIP) or outcome is None:
        return None
    if outcome == REJECTED:
        return None if is_correct_rejection(record) else "rejected-valid"
    return str(outcome)


def finding_records(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records that are findings (shrunk reproducers included)."""
    return [r for r in records if outcome_class(r) is not None]


def _side(rule: str | None) -> str | None:
    found = RULES.get(rule or "")
    return found.side if found is not None else None


def _one_sided(record: Mapping[str, Any]) -> str | None:
    producer, consumer = record.get("producer"), record.get("consumer")
    if producer and not consumer:
        return "producer"
    if consumer and not producer:
        return "consumer"
    return None


def culprit_of(
    record: Mapping[str, Any], lost_opposite_reference: set[tuple[str, str, str]] | None = None
) -> dict[str, Any]:
    """{"library", "role", "why"} of the library at fault for `record` (library None when it
    cannot be told, `why` saying why). `lost_opposite_reference` holds (family, role, library)
    for libraries that crashed/hung/poisoned opposite the reference producer or consumer."""
    named = record.get("culprit")
    if isinstance(named, dict) and named.get("library"):
        return {"library": named["library"], "role": named.get("role"), "why": named.get("why")}
    cls = outcome_class(record)
    producer, consumer = record.get("producer"), record.get("consumer")
    rule = record.get("rule")
    one = _one_sided(record)

    def blame(role: str, why: str) -> dict[str, Any]:
        library = producer if role == "producer" else consumer
        if library is None:
            return {"library": None, "role": role, "why": f"ambiguous: no {role} in this cell"}
        return {"library": library, "role": role, "why": why}

    if cls in ("accepted-invalid", "rejected-valid"):
        if rule == "CAI-PORT-OPAQUE-EXPORT":
            return blame("producer", "the producer refused to export")
        if cls == "accepted-invalid":
            return blame("consumer", "the consumer took input that breaks the rule")
        if consumer == REFERENCE and producer:
            return blame("producer", "the reference consumer refused the producer's export")
        return blame("consumer", "the consumer refused a valid export")
    if one is not None:
        return blame(one, f"the only library in a {one} cell")
    if cls in _LOST:
        family = record.get("check")
        known = lost_opposite_reference or set()
        if producer == REFERENCE:
            return blame("consumer", "opposite the reference producer")
        if consumer == REFERENCE:
            return blame("producer", "opposite the reference consumer")
        if (family, "consumer", consumer) in known:
            return blame("consumer", f"{consumer} also dies opposite the reference producer")
        if (family, "producer", producer) in known:
            return blame("producer", f"{producer} also dies opposite the reference consumer")
        return {
            "library": None,
            "role": None,
            "why": f"ambiguous: {producer} and {consumer} share the worker that died, and "
            f"neither dies opposite the reference in {family}",
        }
    side = _side(rule)
    if side in ("producer", "consumer"):
        return blame(side, f"{rule} binds the {side}")
    if producer == REFERENCE:
        return blame("consumer", "opposite the reference producer")
    if consumer == REFERENCE:
        return blame("producer", "opposite the reference consumer")
    return {
        "library": None,
        "role": None,
        "why": f"ambiguous: {rule or 'the rule'} binds both sides and neither is the reference",
    }


def group_key(record: Mapping[str, Any], culprit: Mapping[str, Any]) -> tuple:
    """(library, role, rule, outcome class): what a maintainer fixes once."""
    return (culprit.get("library"), culprit.get("role"), record.get("rule"), outcome_class(record))


def _lost_opposite_reference(records: Iterable[Mapping[str, Any]]) -> set[tuple[str, str, str]]:
    out = set()
    for r in records:
        if r.get("outcome") in _LOST:
            if r.get("producer") == REFERENCE and r.get("consumer"):
                out.add((r.get("check"), "consumer", r["consumer"]))
            if r.get("consumer") == REFERENCE and r.get("producer"):
                out.add((r.get("check"), "producer", r["producer"]))
    return out


def _cell(record: Mapping[str, Any]) -> str:
    return f"{record.get('check')}/{record.get('producer') or '-'}/{record.get('consumer') or '-'}"


def _flat(value: Any, prefix: str = "") -> dict[str, str]:
    """params flattened to dotted keys with JSON values (seeds and spins left out)."""
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, inner in value.items():
            if key in _PARAM_NOISE:
                continue
            out.update(_flat(inner, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): json.dumps(value, sort_keys=True)}


def _size(record: Mapping[str, Any]) -> int:
    return len(json.dumps(record.get("params"), sort_keys=True, default=str))


def _neighbour(failing: Mapping[str, Any], passing: Sequence[Mapping[str, Any]]) -> str | None:
    """The contrast of `failing` with its nearest passing example (same cell), or None."""
    want = _flat(failing.get("params") or {})
    best: tuple[int, dict[str, str]] | None = None
    for other in passing:
        have = _flat(other.get("params") or {})
        if set(have) != set(want):
            continue
        diff = {k: have[k] for k in want if have[k] != want[k]}
        if any(k.startswith("interface.") for k in diff):
            continue  # an encoded dict differs in its own ways: the mutation label says it
        if diff and (best is None or len(diff) < best[0]):
            best = (len(diff), diff)
    if best is None or best[0] > _MAX_DIFF:
        return None
    fails = ", ".join(f"{k}={want[k]}" for k in sorted(best[1]))
    passes = ", ".join(f"{k}={v}" for k, v in sorted(best[1].items()))
    return f"fails with {fails}; passes with {passes}, the rest the same"


def _pattern(failing: Sequence[Mapping[str, Any]], passing: Sequence[Mapping[str, Any]]) -> str:
    """Coverage label values seen only in failing examples (e.g. "dtype in {bfloat16}")."""
    parts = []
    fail_cov = [r.get("coverage") or {} for r in failing]
    pass_cov = [r.get("coverage") or {} for r in passing]
    for key in ("layout", "dtype", "order", "scenario", "mutation", "mask", "version"):
        bad = {c[key] for c in fail_cov if key in c}
        good = {c[key] for c in pass_cov if key in c}
        if bad and good and not bad & good:
            parts.append(f"{key} in {{{', '.join(sorted(map(str, bad)))}}}")
    return "; ".join(parts)


def _version(library: str | None, envs: Mapping[str, Mapping[str, Any]], run_id: Any) -> Any:
    if not library:
        return None
    versions = env_versions(envs.get(str(run_id)) or {})
    return lookup_version(versions, DISTRIBUTION.get(library, library))


def build_catalogue(
    records: Sequence[Mapping[str, Any]],
    envs: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The findings catalogue of `records` (schema `caiconform-findings/1`)."""
    envs = envs or {}
    lost = _lost_opposite_reference(records)
    passing_by_cell: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("outcome") == PASS and not r.get("shrunk"):
            passing_by_cell[_cell(r)].append(r)
    groups: dict[tuple, dict[str, Any]] = {}
    members: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    shrunk: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for r in finding_records(records):
        culprit = culprit_of(r, lost)
        key = group_key(r, culprit)
        if key not in groups:
            rule = RULES.get(r.get("rule") or "")
            groups[key] = {
                "library": culprit["library"],
                "role": culprit["role"],
                "rule": r.get("rule"),
                "level": rule.level.value if rule is not None else None,
                "outcome": outcome_class(r),
                "why": culprit["why"],
            }
        (shrunk if r.get("shrunk") else members)[key].append(r)
    out = []
    for key, group in groups.items():
        examples = members.get(key) or shrunk[key]
        minimal = min(shrunk.get(key) or examples, key=_size)
        cells = sorted({_cell(r) for r in examples})
        passing = [p for cell in cells for p in passing_by_cell.get(cell, [])]
        condition = _pattern(examples, passing)
        contrast = _neighbour(minimal, passing_by_cell.get(_cell(minimal), []))
        group.update(
            {
                "count": len(examples),
                "cells": cells,
                "checks": sorted({str(r.get("check")) for r in examples}),
                "condition": condition or None,
                "contrast": contrast,
                "version": _version(group["library"], envs, minimal.get("run_id")),
                "message": minimal.get("message"),
                "reproducer": {
                    "cell": _cell(minimal),
                    "params": minimal.get("params"),
                    "repro": minimal.get("repro"),
                    "run_id": minimal.get("run_id"),
                    "shrunk": bool(minimal.get("shrunk")),
                },
            }
        )
        out.append(group)
    severity = {"crash": 0, "poisoned": 1, "hang": 2, "fail": 3, "accepted-invalid": 4}
    level_rank = {"MUST": 0, "SHOULD": 1, "PORTABILITY": 2, "MAY": 3}
    out.sort(
        key=lambda g: (
            g["library"] is None,
            str(g["library"]),
            severity.get(g["outcome"], 5),
            level_rank.get(g["level"] or "", 4),
            -g["count"],
            str(g["rule"]),
        )
    )
    counts = Counter(g["library"] or "(ambiguous)" for g in out)
    return {
        "schema": SCHEMA,
        "runs": sorted({str(r.get("run_id")) for r in records if r.get("run_id")}),
        "groups": out,
        "summary": {
            "groups": len(out),
            "must_groups": sum(g["level"] == "MUST" for g in out),
            "ambiguous_groups": sum(g["library"] is None for g in out),
            "by_library": dict(sorted(counts.items())),
        },
    }


def _keys(catalogue: Mapping[str, Any]) -> dict[tuple, Mapping[str, Any]]:
    return {
        (g["library"], g["role"], g["rule"], g["outcome"]): g for g in catalogue.get("groups", [])
    }


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """How far two catalogues agree: groups in both, only in one, the overlap |A and B| /
    |A or B|, and whether every MUST-level group of either is in both."""
    ka, kb = _keys(a), _keys(b)
    both = sorted(set(ka) & set(kb), key=str)
    only_a = sorted(set(ka) - set(kb), key=str)
    only_b = sorted(set(kb) - set(ka), key=str)
    union = len(set(ka) | set(kb))
    must = {k for k, g in {**ka, **kb}.items() if g.get("level") == "MUST"}
    must_missing = sorted((k for k in must if k not in ka or k not in kb), key=str)

    def listed(keys: Iterable[tuple], table: Mapping[tuple, Mapping[str, Any]]) -> list[dict]:
        return [
            {
                "library": k[0],
                "role": k[1],
                "rule": k[2],
                "outcome": k[3],
                "level": table[k].get("level"),
                "count": table[k].get("count"),
            }
            for k in keys
        ]

    return {
        "in_both": len(both),
        "only_a": listed(only_a, ka),
        "only_b": listed(only_b, kb),
        "overlap": (len(both) / union) if union else 1.0,
        "must_groups": len(must),
        "must_in_both": not must_missing,
        "must_missing": listed(must_missing, {**kb, **ka}),
    }
