"""Rule coverage: which checks exercise each rule of the catalogue, how many examples of a run
did, and why a rule no check exercises cannot be checked.

What checks what is read from the code's own declarations, never kept by hand: the rule IDs each
check-family module names (and those of the helpers in `_SUPPORT`, for the families that use them),
every rule the validator judges (the schema family validates every export), the mutations of
`strategies.MUTATIONS` and `spec.families.LIVE` (the adversarial family), and the rule IDs the
EMM checker's modules name (`emm/static.py`, `emm/checks.py`, `emm/paths.py`,
`emm/lifecycle.py`, `emm/gpu/*.py`). The sources are parsed, not imported, so this stays cheap;
the family names and live mutations are plain data beside this module (`spec.families`).

A rule no check names must have a sentence in `UNCHECKED` saying why it cannot be checked;
`tests/test_rule_coverage.py` keeps every MUST and SHOULD rule either exercised or reasoned.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from caiconform.rundir import JOURNAL_NAMES
from caiconform.spec.families import FAMILIES, LIVE
from caiconform.spec.protocols import DLPACK, of_family, of_rule
from caiconform.spec.rules import RULES, Level, Rule, level_text

__all__ = [
    "UNCHECKED",
    "CorruptJournal",
    "RuleCoverage",
    "exercisers",
    "coverage",
    "count_examples",
    "to_markdown",
    "summary",
    "must_should_gaps",
]

_PKG = Path(__file__).resolve().parents[1]
#: the helpers the check families share (`checks/_values.py`, ...): a family that imports any of
#: them exercises the rules they name
_SUPPORT = ("_values", "_results", "_encoding", "_exchange", "_sources")
_USES_SUPPORT = re.compile(r"caiconform\.checks(?:\.| import )(?:" + "|".join(_SUPPORT) + r")\b")
_EMM_MODULES = (
    "static",
    "checks",
    "paths",
    "lifecycle",
    *(f"gpu/{p.stem}" for p in sorted((_PKG / "emm" / "gpu").glob("*.py")) if p.stem != "__init__"),
)


def _literals(path: Path) -> set[str]:
    """Every string constant of the module that is a rule ID of the catalogue."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in RULES
    }


def _dlpack_families() -> list[Path]:
    """The modules of the families of DLPack alone (the catalogue's; agreement, comparing it
    with the CAI, names CAI rules) and, with dlpack_roundtrip, the capsule validator it judges
    every export with (`dlpack/validate.py`)."""
    paths = [_PKG / "checks" / f"{f}.py" for f in DLPACK.families if of_family(f) == (DLPACK,)]
    return [*paths, _PKG / "dlpack" / "validate.py"] if "dlpack_roundtrip" in FAMILIES else paths


def _dlpack_unnamed() -> list[str]:
    """The DLPACK rules no DLPack family names (parsed, as `exercisers` does)."""
    named = set().union(*(_literals(path) for path in _dlpack_families()))
    return [r for r in RULES if of_rule(r) is DLPACK and r not in named]


#: Why a rule has no check: one sentence each. A rule here must have no exerciser (the test
#: says so when a check starts naming it, so the reason is deleted).
UNCHECKED: dict[str, str] = {
    # -- user-side rules: they bind the person writing code, not a library
    "CAI-NUMBA-USER-OTHER-STREAM": "It binds user code launching on another stream, which no "
    "library export or import can show.",
    "CAI-LIFETIME-DATA-USER": "It binds user code (keeping the owner alive), which no library "
    "behaviour can show.",
    "CAI-NUMBA-PRODUCER-LIFETIME": "It states that the user, not Numba, keeps an exported object "
    "alive: an obligation of user code with nothing for Numba to do.",
    "CAI-SYNC-USER-OVERRIDE": "It grants the user a choice (overriding synchronization), which "
    "binds no library.",
    "EMM-SET-ONCE": "It advises the user to set the memory manager once; no plugin or Numba "
    "behaviour shows whether a user followed it.",
    "EMM-CLOSE-INVALIDATES": "It describes what numba.cuda.close does to the user's objects "
    "(invalid, may segfault), a warning to users with no conforming outcome to observe.",
    # -- documentation and design statements: not observable by running code
    "CAI-SYNC-CORRECT-BY-DEFAULT": "It is the motivation the synchronization rules make concrete; "
    "the streams family judges those rules (CAI-SYNC-CONSUMER, CAI-SYNC-PRODUCER-*) instead.",
    "CAI-SYNC-EXCEPTION-DOCUMENTED": "It asks for documentation of user steps, which a test "
    "cannot read; a library needing such steps fails CAI-SYNC-CONSUMER in the streams family.",
    "CAI-SYNC-EXCEPTION-AVOIDED": "It is a design preference between two legal routes, with no "
    "behaviour that tells them apart from outside.",
    "CAI-SYNC-OPT-OUT-NOT-DEFAULT": "An opt-out set by default shows as a missing "
    "synchronization, which the streams family judges as CAI-SYNC-CONSUMER or "
    "CAI-SYNC-PRODUCER-SUFFICIENT.",
    "EMM-TRANSPARENT": "It says user code never needs to call plugin methods, a statement about "
    "the plugin's documented use that no call sequence can refute.",
    "EMM-DEALLOC-STRATEGY": "It allows any deallocation strategy (free at once, pool, defer), so "
    "every observable behaviour conforms.",
    "EMM-IPC-MIXIN": "It allows mixing in GetIpcHandleMixin; the IPC handle it yields is judged "
    "by the EMM-IPCHANDLE-* checks like any other.",
    # -- Numba-internal or not reachable from outside a library
    "CAI-STREAM-LEGACY": "A consumer's reading of stream 1 is seen only as a synchronization "
    "result; the streams family exports stream 1 from library producers to the reference "
    "consumer (scenario legacy), and no reference producer exports it to library consumers yet.",
    "CAI-STREAM-PER-THREAD": "As for stream 1: the streams family's per-thread scenario checks "
    "producers exporting stream 2; no reference producer exports stream 2 to library consumers "
    "yet.",
    "CAI-SYNC-CONSUMER-NO-OVERTAKE": "It needs later work enqueued on the producer's stream "
    "after the import returns while the consumer's own work runs, an ordering no consumer "
    "adapter exposes today.",
    "CAI-SYNC-CONSUMER-ENQUEUE-RETURN": "It allows a consumer to return at once; both "
    "returning and waiting conform, and what they do to the data is judged by CAI-SYNC-CONSUMER.",
    "CAI-SYNC-CONSUMER-IGNORE": "It allows a user-set option to ignore streams; with the option "
    "off (every run) CAI-SYNC-CONSUMER applies instead.",
    "CAI-SYNC-PRODUCER-NO-WORK": "It allows stream None when no work is pending, so every export "
    "conforms; an export of None with work pending fails CAI-SYNC-PRODUCER-SUFFICIENT.",
    "CAI-POINTER-ATTRIBUTES": "It allows consumers to query the pointer; the reference consumer "
    "does, and a library that does not conforms.",
    "CAI-V1-ZERO-SIZE-UNSPECIFIED": "It states what versions 0 and 1 leave unspecified, so no "
    "behaviour can break it; the versions family exports v0 and v1 dicts all the same.",
    "CAI-SYNC-CONSUMER-OPT-OUT": "It allows a consumer option, so any behaviour conforms.",
    "CAI-NUMBA-STREAM-LIFETIME": "The stream's lifetime is Numba-internal (a reference the array "
    "holds); the lifetime family sees only the data, not the stream object.",
    "CAI-NUMBA-AS-CUDA-ARRAY-OWNER": "The reference numba.cuda.as_cuda_array holds is observed "
    "only through the data staying valid, which the lifetime family judges as "
    "CAI-LIFETIME-DATA-HELD.",
    "CAI-NUMBA-FROM-CAI-OWNER": "Whether from_cuda_array_interface holds a reference is "
    "observed only through lifetime, judged as CAI-LIFETIME-DATA-HELD / CAI-LIFETIME-RELEASED.",
    "CAI-LIFETIME-STREAM": "A stream outliving its exporting object is seen only as a "
    "synchronization on a destroyed stream, which the streams family meets as CAI-STREAM-LIVE.",
    "EMM-DEVICE-MEMORY": "It states whose responsibility device memory is; what that means in "
    "practice is judged by EMM-NUMBA-NO-DIRECT-ALLOC and the EMM-ALLOC-* checks.",
    "EMM-NUMBA-OTHER-OBJECTS": "Events, streams and modules are made by Numba with no plugin "
    "method involved, so a plugin cannot be seen managing them; the allocation-path recorder "
    "sees no plugin call for them either.",
    # -- DLPack rules no DLPack family names (`_dlpack_unnamed`): reasoned here
    **{
        rule_id: "No check family exercises it over DLPack; caiconform check judges it on a "
        "capsule (caiconform.dlpack.validate)."
        if RULES[rule_id].dict_visible
        else "No check family exercises it over DLPack, and a capsule alone cannot show it."
        for rule_id in _dlpack_unnamed()
    },
    # -- and those with a reason of their own (after the general one, which they replace)
    "DLPACK-SUBBYTE-PACKED": "No family exports a float6 or float4 array yet, and the reference "
    "consumer refuses such elements as a type it does not hold (DLPACK-PORT-DTYPE): nothing "
    "reads sub-byte elements to see whether they are packed as the flag says.",
    **{
        rule_id: "The copy case of dlpack_consumer asks a consumer for the array's own device: "
        "an import onto another device (kDLCPU of device memory), where these apply, is not "
        "played yet."
        for rule_id in (
            "DLPACK-FROM-DEVICE-CPU",
            "DLPACK-FROM-DEVICE-BUFFERERROR",
            "DLPACK-FROM-COPY-FALSE-VALUEERROR",
        )
    },
    "DLPACK-STRIDES-NULL-LEGACY": "It allows NULL strides before DLPack 1.2, so no behaviour "
    "breaks it; the validator accepts them there and every reader reads them as compact "
    "row-major.",
}


def _dict_keys(path: Path, name: str) -> set[str]:
    """The string keys of the module-level dict assigned to `name` (MUTATIONS)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        target = getattr(node, "target", None) or (getattr(node, "targets", None) or [None])[0]
        if isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.Dict):
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return set()


def exercisers() -> dict[str, list[str]]:
    """rule ID -> the checks that exercise it: "family:<name>" or "emm-check:<module>"."""
    found: dict[str, set[str]] = {}

    def add(rules: set[str], who: str) -> None:
        for rule in rules:
            found.setdefault(rule, set()).add(who)

    support = set().union(*(_literals(_PKG / "checks" / f"{m}.py") for m in _SUPPORT))
    for family in FAMILIES:
        path = _PKG / "checks" / f"{family}.py"
        add(_literals(path), f"family:{family}")
        if _USES_SUPPORT.search(path.read_text(encoding="utf-8")):
            add(support, f"family:{family}")
    add(_literals(_PKG / "spec" / "validate.py"), "family:schema")
    if "dlpack_roundtrip" in FAMILIES:
        add(_literals(_PKG / "dlpack" / "validate.py"), "family:dlpack_roundtrip")
    add(_dict_keys(_PKG / "strategies.py", "MUTATIONS"), "family:adversarial")
    add({rule for rule in LIVE.values() if rule}, "family:adversarial")
    for module in _EMM_MODULES:
        add(_literals(_PKG / "emm" / f"{module}.py"), f"emm-check:{module}")
    return {rule: sorted(found[rule]) for rule in RULES if rule in found}


@dataclass
class RuleCoverage:
    rule: Rule
    checks: list[str] = field(default_factory=list)
    examples: int | None = None
    findings: int | None = None

    @property
    def reason(self) -> str:
        return UNCHECKED.get(self.rule.id, "")

    @property
    def status(self) -> str:
        if self.checks:
            return "exercised"
        return "reasoned" if self.reason else "MISSING"

    def to_dict(self) -> dict:
        return {
            "id": self.rule.id,
            "level": self.rule.level.value,
            "side": self.rule.side.value,
            "status": self.status,
            "checks": self.checks,
            "examples": self.examples,
            "findings": self.findings,
            "reason": self.reason,
        }


class CorruptJournal(ValueError):
    """A journal line that is not a JSON record: the message names the file and the line."""


def _journal(run_dir: Path) -> Path:
    for name in JOURNAL_NAMES:
        if (run_dir / name).is_file():
            return run_dir / name
    if run_dir.is_file():
        return run_dir
    raise FileNotFoundError(f"{run_dir}: no {' or '.join(JOURNAL_NAMES)}")


def count_examples(
    run_dir: str | Path, checks: dict[str, list[str]] | None = None
) -> tuple[dict[str, int], dict[str, int]]:
    """(examples, findings) per rule ID from a run's journal.

    An example that ran (outcome other than `skip`) counts for the rule it names (its finding,
    its mutant's rule, its live mutation's rule) and, unless it is an adversarial example about
    one rule, for every rule its family exercises. A finding is an example naming the rule with
    an outcome other than `pass`. Blank lines are passed over; a line that is not a JSON object
    is CorruptJournal naming the file and the line, as `caiconform report` refuses it.
    """
    checks = exercisers() if checks is None else checks
    by_family: dict[str, set[str]] = {}
    for rule, who in checks.items():
        for w in who:
            if w.startswith("family:"):
                by_family.setdefault(w.split(":", 1)[1], set()).add(rule)
    examples: dict[str, int] = {}
    findings: dict[str, int] = {}
    path = _journal(Path(run_dir))
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise CorruptJournal(f"{path}:{number}: not JSON: {exc}") from None
            if not isinstance(record, dict):
                raise CorruptJournal(f"{path}:{number}: not a JSON object (a record)")
            if record.get("outcome") in (None, "skip"):
                continue
            params = record.get("params") if isinstance(record.get("params"), dict) else {}
            named = {r for r in (record.get("rule"), params.get("rule")) if r in RULES}
            mutation = params.get("mutation")
            if mutation in LIVE and LIVE[mutation]:
                named.add(LIVE[mutation])
            family = record.get("check")
            about_one = family == "adversarial" and (params.get("rule") or mutation in LIVE)
            rules = set(named) if about_one else named | by_family.get(family, set())
            for rule in rules:
                examples[rule] = examples.get(rule, 0) + 1
            if record.get("outcome") != "pass":
                for rule in {record.get("rule")} & set(RULES):
                    findings[rule] = findings.get(rule, 0) + 1
    return examples, findings


def coverage(run_dir: str | Path | None = None) -> list[RuleCoverage]:
    """One entry per rule, in catalogue order; with `run_dir`, the run's example counts."""
    checks = exercisers()
    counts: tuple[dict[str, int], dict[str, int]] | None = None
    if run_dir is not None:
        counts = count_examples(run_dir, checks)
    out = []
    for rule in RULES.values():
        entry = RuleCoverage(rule, checks.get(rule.id, []))
        if counts is not None:
            entry.examples = counts[0].get(rule.id, 0)
            entry.findings = counts[1].get(rule.id, 0)
        out.append(entry)
    return out


def summary(entries: list[RuleCoverage]) -> dict[str, dict[str, int]]:
    """level -> status -> number of rules."""
    out: dict[str, dict[str, int]] = {}
    for e in entries:
        level = out.setdefault(e.rule.level.value, {})
        level[e.status] = level.get(e.status, 0) + 1
    return out


def to_markdown(entries: list[RuleCoverage], run_dir: str | None = None) -> str:
    """The docs table (docs/coverage.md is this, made by `caiconform rules --coverage
    --markdown`)."""
    counts = summary(entries)
    lines = [
        "# Rule coverage",
        "",
        "Generated by `caiconform rules --coverage"
        + (f" {run_dir}" if run_dir else "")
        + " --markdown`; do not edit by hand. For each rule of the catalogue: the check families",
        "(`family:`) and EMM checker modules (`emm-check:`) that exercise it, read from the code's",
        "own rule IDs, or the reason it cannot be checked (`caiconform/spec/rule_coverage.py`,",
        "`UNCHECKED`).",
        "",
        "| Level | exercised | reasoned | missing |",
        "|---|---|---|---|",
    ]
    for level in Level:
        c = counts.get(level.value, {})
        lines.append(
            f"| {level.value} | {c.get('exercised', 0)} | {c.get('reasoned', 0)} | "
            f"{c.get('MISSING', 0)} |"
        )
    with_counts = any(e.examples is not None for e in entries)
    head = "| Rule | Level | Side | Checked by |" + (
        " Examples | Findings |" if with_counts else ""
    )
    lines += [
        "",
        head + " Reason |",
        "|---|---|---|---|" + ("---|---|" if with_counts else "") + "---|",
    ]
    for e in entries:
        row = f"| `{e.rule.id}` | {level_text(e.rule, quote=False)} | {e.rule.side.value} | "
        row += (", ".join(e.checks) or "—") + " |"
        if with_counts:
            row += f" {e.examples} | {e.findings} |"
        row += " " + e.reason.replace("|", "\\|") + " |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def must_should_gaps(entries: list[RuleCoverage] | None = None) -> list[str]:
    """MUST and SHOULD rules neither exercised nor reasoned."""
    entries = coverage() if entries is None else entries
    return [
        e.rule.id
        for e in entries
        if e.rule.level in (Level.MUST, Level.SHOULD) and e.status == "MISSING"
    ]
