"""The catalogue of non-conformances: a run's records grouped into findings a maintainer acts on.

A *finding group* is one library, in one role, breaking one rule with one outcome class,
whatever the pair, the check family or the example: `(library, role, rule, outcome)`. A record
with no rule of its own (a crash, a refusal the check could not tie to a rule) is grouped by the
rule its input was built to break (`input_rule`: the adversarial mutant's or live mutation's
rule), so a segfault on a bogus stream handle and one on a malformed `strides` stay apart. The
group is the unit a report lists, a maintainer fixes once, and two runs are compared on
(`compare`). Each group carries the evidence to defend it: how many examples and cells showed
it, its minimal reproducer (the example hypothesis shrank the class to, else the smallest one),
the library's version, the *condition* under which it happens, and one message.

Who is at fault (`culprit`), read from the record, the rule and the pair:
- a record may name it (`"culprit": {"library", "role", "why"}`, library None when the check
  established that it cannot be told);
- `accepted-invalid` and a `rejected` of valid input are the consumer's (it took what it must
  refuse, or refused what it should read), except CAI-PORT-OPAQUE-EXPORT (the producer refused
  to export) and a refusal by the reference consumer (the producer's export);
- in a one-sided family (schema, versions, adversarial, ...) the one library in the cell;
- a `fail` is the side the rule binds (`Rule.side`); a rule binding both sides, or a crash, hang
  or poisoned context, is pinned on the third-party side of a pair with the reference. Between
  two third-party libraries it is pinned by triangulation: on the side that shows the same
  class opposite the reference, or that shows it opposite two or more partners each of which
  passes that family with another library; else it stays ambiguous;
- a CAI-DLPACK-AGREE fail from a run whose check read the capsule through another library
  (cuda.core) rather than parsing it itself is ambiguous between the producer and that reader.
A group whose culprit cannot be told is kept, with `library: null` and the reason.

A group's `severity` is the harm it did (`caiconform.results.severity`); `level_text` is its rule's level
as reports show it (derived rules marked, `spec.rules.level_text`). A group whose input broke a
rule the dict cannot show (a host pointer, an extent past the allocation, a handle that is no
stream) is `about_input`: severity None, no defect of the consumer, listed apart by the reports.

Conditions, two of them per group:
- `condition`: coverage labels (layout kind, dtype class, byte order, stream scenario, mutation,
  mask, version, and the partner library) whose values occur in the group's examples and never
  in the same family's passing examples of the culprit in the same role: "dtype is
  float8_e4m3fn", "producer in {jax, torch}"; failing that, the first pair of labels whose
  failing values never meet in a passing example. Records without `coverage` (older runs) have their
  labels read from params.
- `contrast`: the minimal failing example set against its nearest passing neighbour in the
  group's cells: the fewest differing *coarse* params (derived ones included: strides explicit or
  None, dtype class, byte order, zero size, and every categorical param: layout kind, stream
  scenario, version, mask, mutation, ...), then the fewest differing exact values (typestr,
  shape, strides, offset). It reads "fails when layout.strides is explicit (passes with
  layout.strides: None, same otherwise)"; exact values that also differ are named after "also
  different:". Seeds and spin lengths are ignored. Without one: "no passing neighbour in this
  run".
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from caiconform.results.expectations import env_versions, is_correct_rejection, lookup_version
from caiconform.results.filing import filed_rule, implied_rule, input_rule
from caiconform.results.fold import findings, fold, signature
from caiconform.results.outcome import CRASH, HANG, PASS, POISONED, REJECTED, SKIP
from caiconform.results.record import LABELS, cell_key
from caiconform.results.severity import (
    SEVERITIES,
    about_input,
    bound_for,
    bounded,
    harm_of,
    rank,
    wrong_exception,
)
from caiconform.spec.rules import RULES, level_text

__all__ = [
    "SCHEMA",
    "REFERENCE",
    "NO_NEIGHBOUR",
    "Evidence",
    "build_catalogue",
    "contrast",
    "culprit_of",
    "filed_rule",
    "group_key",
    "group_order",
    "implied_rule",
    "compare",
    "finding_records",
    "input_rule",
    "labels_of",
    "library_version",
    "lost_on_input",
    "lost_on_input_alone",
    "outcome_class",
    "passed",
    "reproduced",
]

SCHEMA = "caiconform-findings/1"
REFERENCE = "reference"
NO_NEIGHBOUR = "no passing neighbour in this run"
#: adapter name -> the distribution its version is read from
DISTRIBUTION = {
    "numba": "numba-cuda",
    "numba-from-cai": "numba-cuda",
    "numba-kernel": "numba-cuda",
    "numba-mlir": "numba-cuda-mlir",
    "numba-mlir-from-cai": "numba-cuda-mlir",
    "numba-mlir-kernel": "numba-cuda-mlir",
    "cuda.core": "cuda-core",
    "reference": "caiconform",
    "warp": "warp-lang",
    "rmm": "rmm",
    "cuda.cccl": "cuda-cccl",
    "dali": "nvidia-dali",
}
_LOST = (CRASH, HANG, POISONED)
#: params that vary an example without changing what it exchanges
_PARAM_NOISE = ("seed", "delay_us")
#: params compared by exact value only (their coarse reading is derived: dtype class, byte
#: order, zero size, strides explicit or None); every other param is categorical
_EXACT = frozenset(
    {
        "typestr",
        "shape",
        "layout.shape",
        "layout.strides",
        "layout.offset",
        "layout.pad",
        "interface.data",
        "interface.shape",
        "interface.strides",
    }
)
#: exact params a coarse difference already accounts for
_IMPLIES = {
    "dtype": ("typestr",),
    "byte order": ("typestr",),
    "size": ("shape", "layout.shape"),
    "layout.strides explicit": ("layout.strides",),
    "layout.kind": ("layout.strides", "layout.offset", "layout.pad"),
    "layout.portable": ("layout.strides",),
}
#: coarse differences a contrast may name (more is not a condition, it is another example)
_MAX_DIFF = 3
#: coverage labels a condition is read from, in the order it names them: the coverage labels
#: (`results.record.LABELS`, last the memory kind the producer allocated) but `object`, the
#: non-exporting object a schema example offered, which conditions have not named
_LABELS = tuple(label for label in LABELS if label != "object")
#: what a CAI-DLPACK-AGREE fail says when the check parsed the producer's capsule itself
_CAPSULE_PARSED_HERE = "own DLPack capsule"


def outcome_class(record: Mapping[str, Any]) -> str | None:
    """The finding class of a record, or None when it is no finding (pass, skip, a correct
    rejection): fail, accepted-invalid, crash, hang, poisoned, rejected-valid."""
    outcome = record.get("outcome")
    if outcome in (PASS, SKIP) or outcome is None:
        return None
    if outcome == REJECTED:
        return None if is_correct_rejection(record) else "rejected-valid"
    return str(outcome)


def passed(record: Mapping[str, Any]) -> bool:
    """A pass, or a correct rejection of invalid input (what the report counts as passed)."""
    outcome = record.get("outcome")
    return outcome == PASS or (outcome == REJECTED and is_correct_rejection(record))


def finding_records(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records that are findings (shrunk reproducers included)."""
    return [r for r in records if outcome_class(r) is not None]


def _side(rule: str | None) -> str | None:
    found = RULES.get(rule or "")
    return found.side.value if found is not None else None


def _one_sided(record: Mapping[str, Any]) -> str | None:
    producer, consumer = record.get("producer"), record.get("consumer")
    if producer and not consumer:
        return "producer"
    if consumer and not producer:
        return "consumer"
    return None


@dataclass
class Evidence:
    """What the whole run says about pairs, for pinning a finding between two libraries.

    lost_opposite_reference: (family, role, library) that crashed/hung/poisoned opposite the
        reference producer or consumer.
    partners: (family, rule, class, role, library) -> the libraries opposite which `library`,
        in `role`, showed that class (pair cells only).
    passes_with: (family, role, library) -> the libraries opposite which it passed.
    """

    lost_opposite_reference: set[tuple[str, str, str]] = field(default_factory=set)
    partners: dict[tuple, set[str]] = field(default_factory=lambda: defaultdict(set))
    passes_with: dict[tuple, set[str]] = field(default_factory=lambda: defaultdict(set))

    @classmethod
    def of(cls, records: Iterable[Mapping[str, Any]]) -> Evidence:
        evidence = cls()
        for r in records:
            family, producer, consumer = r.get("check"), r.get("producer"), r.get("consumer")
            if not producer or not consumer:
                continue
            if passed(r):
                evidence.passes_with[(family, "producer", producer)].add(consumer)
                evidence.passes_with[(family, "consumer", consumer)].add(producer)
                continue
            cls_ = outcome_class(r)
            if cls_ is None:
                continue
            rule = r.get("rule") or input_rule(r)
            evidence.partners[(family, rule, cls_, "producer", producer)].add(consumer)
            evidence.partners[(family, rule, cls_, "consumer", consumer)].add(producer)
            if cls_ in _LOST:
                if producer == REFERENCE:
                    evidence.lost_opposite_reference.add((family, "consumer", consumer))
                if consumer == REFERENCE:
                    evidence.lost_opposite_reference.add((family, "producer", producer))
        return evidence

    def triangulate(self, record: Mapping[str, Any]) -> tuple[str, str] | None:
        """(role, why) of the side a finding between two third-party libraries is pinned on:
        the one whose partners each pass this family with a third library while it shows the
        same class opposite two or more of them. None when the pair cannot be split."""
        family, producer, consumer = (
            record.get("check"),
            record.get("producer"),
            record.get("consumer"),
        )
        if not producer or not consumer:
            return None
        rule, cls_ = record.get("rule") or input_rule(record), outcome_class(record)
        for role, library, other_role in (
            ("consumer", consumer, "producer"),
            ("producer", producer, "consumer"),
        ):
            partners = self.partners.get((family, rule, cls_, role, library), set())
            if len(partners) < 2:
                continue
            clean = all(
                self.partners.get((family, rule, cls_, other_role, p), set()) == {library}
                and self.passes_with.get((family, other_role, p), set()) - {library}
                for p in partners
            )
            if clean:
                named = ", ".join(sorted(partners))
                return role, (
                    f"{library} shows it opposite {named}, and each of those passes "
                    f"{family} with other libraries"
                )
        return None


def culprit_of(record: Mapping[str, Any], evidence: Evidence | None = None) -> dict[str, Any]:
    """{"library", "role", "why"} of the library at fault for `record` (library None when it
    cannot be told, `why` saying why). `evidence` (`Evidence.of(all records)`) lets a finding
    between two third-party libraries be pinned on one of them."""
    named = record.get("culprit")
    if isinstance(named, dict) and (named.get("library") or named.get("why")):
        return {"library": named.get("library"), "role": named.get("role"), "why": named.get("why")}
    cls = outcome_class(record)
    producer, consumer = record.get("producer"), record.get("consumer")
    rule = record.get("rule")
    one = _one_sided(record)

    def blame(role: str, why: str) -> dict[str, Any]:
        library = producer if role == "producer" else consumer
        if library is None:
            return {"library": None, "role": role, "why": f"ambiguous: no {role} in this cell"}
        return {"library": library, "role": role, "why": why}

    if rule == "CAI-DLPACK-AGREE" and _CAPSULE_PARSED_HERE not in str(record.get("seen")):
        return {
            "library": None,
            "role": None,
            "why": f"ambiguous: {producer}'s DLPack capsule was read through another library "
            "(cuda.core's from_dlpack), so either may have written the value",
        }
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
    side = None if cls in _LOST else _side(rule)
    if side in ("producer", "consumer"):
        return blame(side, f"{rule} binds the {side}")
    if producer == REFERENCE:
        return blame("consumer", "opposite the reference producer")
    if consumer == REFERENCE:
        return blame("producer", "opposite the reference consumer")
    raised = _raised_before_poison(record)
    if raised is not None:
        return blame(*raised)
    evidence = evidence or Evidence()
    family = record.get("check")
    if cls in _LOST:
        if (family, "consumer", consumer) in evidence.lost_opposite_reference:
            return blame("consumer", f"{consumer} also dies opposite the reference producer")
        if (family, "producer", producer) in evidence.lost_opposite_reference:
            return blame("producer", f"{producer} also dies opposite the reference consumer")
    pinned = evidence.triangulate(record)
    if pinned is not None:
        return blame(*pinned)
    if cls in _LOST:
        why = (
            f"{producer} and {consumer} share the worker that died, and neither dies opposite "
            f"the reference or opposite several partners in {family}"
        )
    else:
        why = (
            f"{rule or 'the rule'} binds both sides, and neither {producer} nor {consumer} "
            f"shows it opposite the reference or opposite several partners in {family}"
        )
    return {"library": None, "role": None, "why": f"ambiguous: {why}"}


#: how the runner says that a poisoned example had ended with a refusal first
_ENDED_REJECTED = "(the example itself ended rejected: "


def _raised_before_poison(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """(role, why) for a context poisoned after the example ended in a refusal whose
    exception one side's own call raised: the producer's `__dlpack__` ("__dlpack__({...})
    raised ..."), else the consumer's import of an export it was handed (a CAI export is a
    dict; the consumer's read faulted). None for any other record."""
    message = str(record.get("message") or "")
    if record.get("outcome") != POISONED or _ENDED_REJECTED not in message:
        return None
    producer, consumer = record.get("producer"), record.get("consumer")
    inner = message.split(_ENDED_REJECTED, 1)[1]
    if not producer or not consumer or not inner.startswith(f"{producer}->{consumer}"):
        return None
    if "__dlpack__(" in inner and ") raised " in inner:
        return "producer", (
            f"{producer}'s own __dlpack__ raised the error that left the context unusable"
        )
    if ": got " in inner:
        return "consumer", (
            f"{consumer}'s import of {producer}'s export raised the error that left the "
            "context unusable"
        )
    return None


def group_key(record: Mapping[str, Any], culprit: Mapping[str, Any]) -> tuple:
    """(library, role, rule, outcome class): what a maintainer fixes once. A record without a
    rule is keyed by its input's rule (`input_rule`), marked so it is no rule of the record;
    one without either by the rule its failing side had to honour (`implied_rule`)."""
    rule, how = filed_rule(record, culprit.get("role"))
    if how == "input":
        rule = f"input:{rule}"
    return (culprit.get("library"), culprit.get("role"), rule, outcome_class(record))


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """params flattened to dotted keys (seeds and spins left out); an adversarial mutant's
    encoded dict is flattened by its keys, each value shown as Python writes it."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            if key in _PARAM_NOISE:
                continue
            if key == "interface" and isinstance(inner, dict) and "$dict" in inner:
                for entry in inner["$dict"]:
                    name = entry[0] if isinstance(entry[0], str) else _shown(entry[0])
                    out[f"{prefix}interface.{name}"] = _Shown(_shown(entry[1]))
                continue
            out.update(_flat(inner, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


class _Shown(str):
    """A value already written as text (an encoded interface entry)."""


def _shown(value: Any) -> str:
    """An encoded adversarial value (`checks._encoding.encode`) as Python writes it."""
    if isinstance(value, dict):
        if "$tuple" in value:
            items = [_shown(v) for v in value["$tuple"]]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if "$dict" in value:
            return "{" + ", ".join(f"{_shown(k)}: {_shown(v)}" for k, v in value["$dict"]) + "}"
        if "$bytes" in value:
            return repr(bytes.fromhex(str(value["$bytes"])))
        if "$cai" in value:
            return f"<object exporting {_shown(value['$cai'])}>"
        for tag in ("$opaque", "$raising"):
            if tag in value:
                return f"<{tag[1:]} {value[tag]}>"
        return "{" + ", ".join(f"{k!r}: {_shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


def _dtype_labels(typestr: Any) -> dict[str, str]:
    from caiconform.spec.dtypes import byte_order, dtype_class

    if not isinstance(typestr, str):
        return {}
    try:
        return {"dtype": dtype_class(typestr), "byte order": byte_order(typestr)}
    except (ValueError, KeyError, TypeError):
        return {}


def _features(params: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """(coarse, exact) features of an example's params, values as text."""
    flat = _flat(dict(params))
    if any(k.startswith("interface.") for k in flat):
        flat.pop("rule", None)  # a mutant's label: the dict exchanged is what differs
    coarse = {k: _text(v) for k, v in flat.items() if k not in _EXACT}
    exact = {k: _text(v) for k, v in flat.items() if k in _EXACT}
    coarse.update(_dtype_labels(flat.get("typestr")))
    shape = flat.get("layout.shape", flat.get("shape"))
    if isinstance(shape, list):
        coarse["size"] = "zero" if 0 in shape else "nonzero"
    if "layout.strides" in flat:
        coarse["layout.strides explicit"] = "None" if flat["layout.strides"] is None else "explicit"
    return coarse, exact


def _text(value: Any) -> str:
    if isinstance(value, _Shown):
        return str(value)
    if isinstance(value, str):
        return value
    if value is None:
        return "None"
    return json.dumps(value, sort_keys=True)


def _diff(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _name(key: str) -> str:
    return "layout.strides" if key == "layout.strides explicit" else key


def contrast(failing: Mapping[str, Any], passing: Sequence[Mapping[str, Any]]) -> str:
    """The condition of `failing` read against its nearest passing example in `passing`: "fails
    when K is V (passes with K: W, same otherwise)", or why there is none."""
    params = failing.get("params") or {}
    mutant = params.get("rule") if "interface" in params else None
    if mutant:  # another mutant is only a neighbour when it breaks the same rule
        passing = [p for p in passing if (p.get("params") or {}).get("rule") == mutant]
        if not passing:
            return f"{NO_NEIGHBOUR} (no other example breaking {mutant} was handled correctly)"
    if not passing:
        return NO_NEIGHBOUR
    want_coarse, want_exact = _features(params)
    best: tuple[tuple[int, int], list[str], list[str], Mapping[str, Any]] | None = None
    for other in passing:
        have_coarse, have_exact = _features(other.get("params") or {})
        coarse, exact = _diff(want_coarse, have_coarse), _diff(want_exact, have_exact)
        if not coarse and not exact:
            continue  # the same example passing elsewhere: no contrast to draw
        rank = (len(coarse), len(exact))
        if best is None or rank < best[0]:
            best = (rank, coarse, exact, other)
    if best is None:
        return f"{NO_NEIGHBOUR} (the same params also pass: flaky or state-dependent)"
    (n_coarse, _n_exact), coarse, exact, other = best
    if n_coarse > _MAX_DIFF:
        return f"{NO_NEIGHBOUR} (the nearest passing example differs in {n_coarse} params)"
    have_coarse, have_exact = _features(other.get("params") or {})
    named = coarse or exact
    table_want = {**want_coarse, **want_exact}
    table_have = {**have_coarse, **have_exact}
    implied = {e for k in coarse for e in _IMPLIES.get(k, ())}
    rest = [k for k in exact if k not in implied] if coarse else []
    when = ", ".join(f"{_name(k)} is {table_want.get(k, 'absent')}" for k in named)
    passes = ", ".join(f"{_name(k)}: {table_have.get(k, 'absent')}" for k in named)
    if rest:
        also = "; ".join(
            f"{k} {want_exact.get(k, 'absent')} vs {have_exact.get(k, 'absent')}" for k in rest
        )
        return f"fails when {when} (passes with {passes}; also different: {also})"
    return f"fails when {when} (passes with {passes}, same otherwise)"


def labels_of(record: Mapping[str, Any]) -> dict[str, str]:
    """A record's coverage labels: its `coverage`, else read from its params (runs before
    the coverage floor): layout kind, dtype class, byte order, stream scenario, mutation, mask,
    version."""
    coverage = record.get("coverage")
    if isinstance(coverage, dict) and coverage:
        return {k: str(v) for k, v in coverage.items() if k in _LABELS}
    params = record.get("params") or {}
    out: dict[str, str] = {}
    dtype = _dtype_labels(params.get("typestr"))
    if dtype:
        out["dtype"], out["order"] = dtype["dtype"], dtype["byte order"]
    layout = params.get("layout")
    shape = layout.get("shape") if isinstance(layout, dict) else params.get("shape")
    if isinstance(layout, dict):
        out["layout"] = str(layout.get("kind", "C"))
    if isinstance(shape, list):
        if not shape:
            out["layout"] = "0d"
        elif 0 in shape:
            out["layout"] = "zero-size"
    for key, label in (
        ("stream_scenario", "scenario"),
        ("mutation", "mutation"),
        ("mask", "mask"),
        ("version", "version"),
        ("memory", "memory"),
        ("entry", "entry"),
    ):
        if params.get(key) is not None:
            out[label] = str(params[key])
    return out


def _partner_label(record: Mapping[str, Any], role: str | None) -> dict[str, str]:
    other = {"consumer": "producer", "producer": "consumer"}.get(role or "")
    if other and record.get(other):
        return {other: str(record[other])}
    return {}


def _pattern(
    failing: Sequence[Mapping[str, Any]],
    passing: Sequence[Mapping[str, Any]],
    role: str | None,
    stated: str = "",
) -> str:
    """Label values seen only in failing examples ("dtype is bfloat16", "producer in {jax,
    torch}"), less those `stated` already says. When no one label separates them, the first
    pair of labels whose failing values never occur together in a passing example ("layout in
    {negative, odd} and dtype in {float32, int16}": CuPy's DLPack strides, wrong for those
    layouts only when the item is wider than a byte)."""
    fail_labels = [{**labels_of(r), **_partner_label(r, role)} for r in failing]
    pass_labels = [{**labels_of(r), **_partner_label(r, role)} for r in passing]
    keys = (*_LABELS, "producer", "consumer")
    parts = []
    for key in keys:
        bad = {c[key] for c in fail_labels if key in c}
        good = {c[key] for c in pass_labels if key in c}
        if bad and good and not bad & good:
            part = _values_part(key, bad)
            if part not in stated:
                parts.append(part)
    if parts or not pass_labels:
        return "; ".join(parts)
    return _pair_pattern(fail_labels, pass_labels, keys, stated)


def _values_part(key: str, values: set[str]) -> str:
    ordered = sorted(values)
    return f"{key} is {ordered[0]}" if len(ordered) == 1 else f"{key} in {{{', '.join(ordered)}}}"


def _pair_pattern(
    fail_labels: list[dict[str, str]],
    pass_labels: list[dict[str, str]],
    keys: Sequence[str],
    stated: str,
) -> str:
    """The first pair of labels (both carried by every failing example) whose failing value
    sets never meet in one passing example, each value set smaller than all the values of that
    label seen (else the pair says nothing a single label would not); '' when none."""
    carried = [k for k in keys if all(k in c for c in fail_labels)]
    for i, first in enumerate(carried):
        for second in carried[i + 1 :]:
            bad_a = {c[first] for c in fail_labels}
            bad_b = {c[second] for c in fail_labels}
            seen_a = bad_a | {c[first] for c in pass_labels if first in c}
            seen_b = bad_b | {c[second] for c in pass_labels if second in c}
            if bad_a == seen_a or bad_b == seen_b:
                continue
            if any(c.get(first) in bad_a and c.get(second) in bad_b for c in pass_labels):
                continue
            part = f"{_values_part(first, bad_a)} and {_values_part(second, bad_b)}"
            return "" if part in stated else part
    return ""


def library_version(library: str | None, env: Mapping[str, Any]) -> str | None:
    """The library's version in a run of `env` (its env.json): as its adapter reported it
    (`adapters.json`: a stated shim shows, "0.30.4+shim(...)"), else its distribution's version
    (`DISTRIBUTION`)."""
    if not library:
        return None
    probed = ((env.get("adapters") or {}).get(library) or {}).get("version")
    if isinstance(probed, str) and probed:
        return probed
    return lookup_version(env_versions(env), DISTRIBUTION.get(library, library))


def _size(record: Mapping[str, Any]) -> int:
    return len(json.dumps(record.get("params"), sort_keys=True, default=str))


def reproduced(
    examples: Iterable[Mapping[str, Any]], confirmations: Mapping[tuple, bool]
) -> bool | None:
    """Whether a group's finding reproduced: True when a class's first example in one of its
    cells gave the same class when the runner ran it again, False when every such re-run gave
    another, None when none was run again (an older run, `--no-confirm`, a hang)."""
    seen = [
        confirmations[key]
        for key in {(cell_key(r), str(r.get("outcome")), r.get("rule")) for r in examples}
        if key in confirmations
    ]
    return any(seen) if seen else None


def _main_mode(examples: Sequence[Mapping[str, Any]]) -> tuple[Any, int, str]:
    """(a test of whether a record shows the commonest failure mode of `examples`, the number
    of modes): a group's reproducer and message come from its commonest mode, so the script a
    maintainer runs shows what most examples did, not the smallest oddity hypothesis shrank to
    (`expectations.detail_pattern`: an exception and message with numbers, shapes and
    addresses generalised)."""
    from caiconform.results.expectations import detail_pattern, outcome_detail

    if len(examples) < 2:
        only = detail_pattern(outcome_detail(examples[0])) if examples else ""
        return (lambda record: True), len(examples), only
    counts = Counter(detail_pattern(outcome_detail(r)) for r in examples)
    top = counts.most_common(1)[0][0]
    return (lambda record: detail_pattern(outcome_detail(record)) == top), len(counts), top


def lost_on_input(record: Mapping[str, Any], rule: str | None) -> bool:
    """Whether a consumer's crash, hang or poisoned context came with a requirement its input
    broke (a producer's MUST or SHOULD rule: a float in shape, a null pointer, an extent past
    the allocation): the example's own report named that rule before the context was found
    unusable, so the group is what the consumer did with such an input, said and ranked as
    one (`severity_of(from_input=True)`: accepts-invalid where the dict shows it, about the
    input where it cannot). A PORTABILITY rule names a legal dict: its crash stays a crash."""
    found = RULES.get(rule or "")
    return (
        record.get("outcome") in (CRASH, HANG, POISONED)
        and found is not None
        and found.side.value == "producer"
        and found.level.value in ("MUST", "SHOULD")
    )


def lost_on_input_alone(record: Mapping[str, Any]) -> bool:
    """Whether `record`, read alone, is a consumer's crash, hang or poisoned context on an
    input that breaks a producer's rule (`lost_on_input`), charged to the consumer without
    other records' evidence (a cell with no producer library: adversarial's mutants): its
    group is filed as what the consumer did with that input, which ranks at most
    `accepts-invalid` (`severity_of(from_input=True)`), whatever the rest of the run holds.
    The runner does not run such an example again (`runner.followup`)."""
    if record.get("outcome") not in (CRASH, HANG, POISONED) or record.get("producer"):
        return False
    culprit = culprit_of(record)
    if culprit["role"] != "consumer":
        return False
    filed, _ = filed_rule(record, "consumer")
    return lost_on_input(record, filed)


def build_catalogue(
    records: Sequence[Mapping[str, Any]],
    envs: Mapping[str, Mapping[str, Any]] | None = None,
    confirmations: Mapping[tuple, bool] | None = None,
) -> dict[str, Any]:
    """The findings catalogue of `records` (schema `caiconform-findings/1`); `confirmations`
    (`load.Run.confirmations`) say which groups reproduced."""
    envs = envs or {}
    confirmations = confirmations or {}
    evidence = Evidence.of(r for r in records if not r.get("shrunk"))
    passing_by_cell: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    passing_by_role: dict[tuple[Any, str, Any], list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if passed(r) and not r.get("shrunk"):
            passing_by_cell[cell_key(r)].append(r)
            for role in ("producer", "consumer"):
                if r.get(role):
                    passing_by_role[(r.get("check"), role, r[role])].append(r)
    groups: dict[tuple, dict[str, Any]] = {}
    members: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    shrunk: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for r in finding_records(records):
        culprit = culprit_of(r, evidence)
        key = group_key(r, culprit)
        if key not in groups:
            filed, how = filed_rule(r, culprit["role"])
            if culprit["role"] == "consumer" and lost_on_input(r, filed):
                how = "input"
            entry = RULES.get(filed or "")
            level = entry.level.value if entry is not None else None
            outcome = outcome_class(r)
            from_input = how == "input"
            type_only = wrong_exception(r.get("seen"), r.get("expected"))
            harm = harm_of(
                outcome, filed, level, from_input=from_input, exception_type_only=type_only
            )
            bound, bound_why = bound_for(outcome, filed, culprit["role"], r.get("check"))
            severity = bounded(harm, bound)
            groups[key] = {
                "library": culprit["library"],
                "role": culprit["role"],
                "rule": None if how == "input" else filed,
                "input_rule": filed if how == "input" else None,
                "rule_implied": how == "implied",
                "level": level,
                "derived": bool(entry is not None and entry.derived),
                "level_text": level_text(entry, level),
                "outcome": outcome,
                "severity": severity,
                # the harm observed, and what bounded the severity below it (docs/severity.md)
                "harm": harm,
                "bound": bound_why if severity != harm else None,
                "bound_severity": bound if severity != harm else None,
                # what a consumer did with a dict breaking a rule the dict cannot show: listed
                # apart as information about the input, never the consumer's defect
                "about_input": (how == "input" or outcome == "accepted-invalid")
                and about_input(filed),
                "why": culprit["why"],
            }
        (shrunk if r.get("shrunk") else members)[key].append(r)
    out = []
    for key, group in groups.items():
        examples = members.get(key) or shrunk[key]
        mode, modes, pattern = _main_mode(examples)
        minimal = min(
            [r for r in shrunk.get(key, []) if mode(r)] or [r for r in examples if mode(r)],
            key=_size,
        )
        cells = sorted({cell_key(r) for r in examples})
        role, library = group["role"], group["library"]
        if library and role:
            families = sorted({str(r.get("check")) for r in examples})
            passing = [p for f in families for p in passing_by_role.get((f, role, library), [])]
        else:
            passing = [p for cell in cells for p in passing_by_cell.get(cell, [])]
        neighbours = passing_by_cell.get(cell_key(minimal)) or [
            p
            for cell in cells
            if cell.split("/")[0] == minimal.get("check")
            for p in passing_by_cell.get(cell, [])
        ]
        stated = contrast(minimal, neighbours)
        group.update(
            {
                "count": len(examples),
                "reproduced": reproduced(examples, confirmations),
                "cells": cells,
                "checks": sorted({str(r.get("check")) for r in examples}),
                "condition": _pattern(examples, passing, role, stated) or None,
                "contrast": stated,
                "version": library_version(library, envs.get(str(minimal.get("run_id"))) or {}),
                "message": minimal.get("message"),
                # distinct failure modes among the examples (exception and message with the
                # numbers generalised); the reproducer is one of the commonest
                "modes": modes,
                # the failure signature groups of one bug share (`results.fold`)
                "signature": signature(
                    group["outcome"], group["rule"] or group["input_rule"], pattern, minimal
                ),
                "reproducer": {
                    "cell": cell_key(minimal),
                    "params": minimal.get("params"),
                    "repro": minimal.get("repro"),
                    "run_id": minimal.get("run_id"),
                    "shrunk": bool(minimal.get("shrunk")),
                },
            }
        )
        out.append(group)
    out.sort(key=group_order)
    fold(out)
    leads = findings(out)
    counts = Counter(g["library"] or "(ambiguous)" for g in leads if not g["about_input"])
    severities = Counter(g["severity"] for g in leads)
    return {
        "schema": SCHEMA,
        "runs": sorted({str(r.get("run_id")) for r in records if r.get("run_id")}),
        "groups": out,
        "summary": {
            "groups": len(out),
            # one per bug: the groups of one culprit and failure signature folded
            "findings": len(leads),
            "must_groups": sum(g["level"] == "MUST" for g in out),
            "ambiguous_groups": sum(g["library"] is None for g in out),
            "about_input_groups": sum(g["about_input"] for g in out),
            "unreproduced_groups": sum(g["reproduced"] is False for g in out),
            "by_library": dict(sorted(counts.items())),
            "by_severity": {s: severities[s] for s in SEVERITIES if severities[s]},
        },
    }


_OUTCOME_ORDER = {"crash": 0, "poisoned": 1, "hang": 2, "fail": 3, "accepted-invalid": 4}
_LEVEL_ORDER = {"MUST": 0, "SHOULD": 1, "PORTABILITY": 2, "MAY": 3}


def group_order(group: Mapping[str, Any]) -> tuple:
    """Sort key of a group: by library (ambiguous last), most severe first, then the rule's
    level, the most examples, the rule."""
    return (
        group.get("library") is None,
        str(group.get("library")),
        rank(group.get("severity")),
        _OUTCOME_ORDER.get(group.get("outcome") or "", 5),
        _LEVEL_ORDER.get(group.get("level") or "", 4),
        -int(group.get("count") or 0),
        str(group.get("rule") or group.get("input_rule")),
    )


def _keys(catalogue: Mapping[str, Any]) -> dict[tuple, Mapping[str, Any]]:
    return {
        (g["library"], g["role"], g["rule"] or _input_key(g), g["outcome"]): g
        for g in catalogue.get("groups", [])
    }


def _input_key(group: Mapping[str, Any]) -> str | None:
    found = group.get("input_rule")
    return f"input:{found}" if found else None


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """How far two catalogues agree: groups in both, only in one, the overlap |A and B| /
    |A or B|, whether every MUST-level group of either is in both, and how many of those that
    are not did not reproduce when run again."""
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
                "rule": table[k].get("rule"),
                "input_rule": table[k].get("input_rule"),
                "outcome": k[3],
                "level": table[k].get("level"),
                "count": table[k].get("count"),
                "reproduced": table[k].get("reproduced"),
            }
            for k in keys
        ]

    missing = listed(must_missing, {**kb, **ka})

    return {
        "in_both": len(both),
        "only_a": listed(only_a, ka),
        "only_b": listed(only_b, kb),
        "overlap": (len(both) / union) if union else 1.0,
        "must_groups": len(must),
        "must_in_both": not must_missing,
        "must_missing": missing,
        # the MUST groups of one run only whose example gave something else when run again
        # (`reproduced` false): a seed difference a maintainer would not be sent
        "must_missing_unreproduced": sum(g["reproduced"] is False for g in missing),
    }
