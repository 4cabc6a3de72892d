"""Expectation files: known failures, each with a reason, that a run must reproduce exactly.

A library rarely conforms everywhere on day one. An expectation file lists the findings a
maintainer knows about, keyed by rule ID and narrowed by producer, consumer, check family and
example parameters, each with the reason (and a link to the issue). Applying it to a journal
turns every result into one of:

- `xfail`: a finding an active entry covers (expected);
- `fail`: a finding no entry covers (unexpected: the run is red);
- `pass` / `skip`: as recorded (a correct rejection of invalid input is a `pass`);

An entry may pin the failure mode it expects (`detail`: patterns over a finding's outcome
detail, the exception type and message or what was seen, `outcome_detail`); a finding of the
same rule and outcome in another mode is then not covered. A baseline writes them
(`detail_pattern`: numbers, addresses, shapes and typestrs generalised) and the example count
it saw (`examples`), against which a tenfold growth is listed.

Every entry becomes one of `xfail` (it covered at least one finding), `xpass` (results in its
scope exist, but none failed the way it says: the bug was fixed), `unmatched` (no result is in
its scope at all: a typo, a renamed check, a library not in the run) or `inactive` (its `when`
version condition is false for every result in scope) or `unjudged` (every active result in its
scope is a `skip`: the library is not installed here, so nothing says whether the failure is
still there; a note, not an error). Strict entries (the default) make
`xpass` and `unmatched` errors, so a list cannot rot: fixed bugs and stale entries have to be
deleted. The file format is documented in docs/expectations.md.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caiconform.results.outcome import (
    ACCEPTED_INVALID,
    CRASH,
    FAIL,
    HANG,
    POISONED,
    REJECTED,
    SKIP,
)
from caiconform.results.record import EXPECT_REJECTION
from caiconform.spec.families import FAMILIES
from caiconform.spec.rules import RULES

__all__ = [
    "FINDING_OUTCOMES",
    "is_finding",
    "is_correct_rejection",
    "ExpectationError",
    "Expectation",
    "RecordVerdict",
    "EntryStatus",
    "Application",
    "load_expectations",
    "parse_expectations",
    "apply_expectations",
    "KNOWN_CHECKS",
    "detail_pattern",
    "env_versions",
    "installed_version",
    "outcome_detail",
    "lookup_version",
    "wildcard_match",
]

#: Outcomes that can be findings: a result that is neither `pass` nor `skip` needs explaining,
#: except a correct rejection (see `is_finding`).
FINDING_OUTCOMES = (FAIL, REJECTED, ACCEPTED_INVALID, CRASH, HANG, POISONED)


def is_correct_rejection(record: Mapping[str, Any]) -> bool:
    """A `rejected` result whose right answer was a rejection: invalid input refused cleanly
    (the check records `expected` = `EXPECT_REJECTION`). That is the consumer doing its job."""
    return record.get("outcome") == REJECTED and record.get("expected") == EXPECT_REJECTION


def is_finding(record: Mapping[str, Any]) -> bool:
    """True for a result a maintainer must look at: a finding outcome, not a correct rejection."""
    return record.get("outcome") in FINDING_OUTCOMES and not is_correct_rejection(record)


_ENTRY_KEYS = frozenset(
    {
        "rule",
        "reason",
        "producer",
        "consumer",
        "check",
        "params",
        "outcome",
        "link",
        "when",
        "strict",
        "detail",
        "examples",
    }
)
_TOP_KEYS = frozenset({"version", "expectations"})
#: every check name the project's own results carry: the built-in families and the pytest
#: plugin's in-process schema check (a third-party family adds its own)
KNOWN_CHECKS = (*FAMILIES, "dict-schema")
_GLOB_CHARS = frozenset("*?")

#: Looks up a library's version by name (adapter or distribution name); None when unknown.
VersionLookup = Callable[[str], "str | None"]


class ExpectationError(ValueError):
    """A malformed expectation file; the message is one line naming the file, entry and field."""


def _canonical(name: str) -> str:
    from packaging.utils import canonicalize_name

    return canonicalize_name(name)


@dataclass(frozen=True)
class Expectation:
    """One entry of an expectation file.

    `rule`, `producer`, `consumer` and `check` are wildcard patterns (`*` any characters, `?` one
    character, nothing else special; `rule` is usually an exact
    catalogue ID; a record without a rule, such as a crash, counts as the empty string, which
    `*` matches). `params` maps a dotted path into the record's params (`layout.kind`,
    `layout.shape.0`) to a pattern: a string is a wildcard pattern over the value (strings as they are,
    anything else as compact JSON, e.g. `"[0, *]"`), a list is any-of, any other value must be
    equal. `outcomes` are the finding outcomes it expects; `when` is a version condition such as
    `torch<2.12`, checked against the versions recorded for the run. `details` are wildcard
    patterns over a finding's `outcome_detail`, any of which it must match (empty: any detail,
    as entries written before baselines pinned the failure mode); `examples` is how many
    examples the baseline that wrote it saw (None: not recorded).
    """

    index: int
    source: str
    rule: str
    reason: str
    producer: str = "*"
    consumer: str = "*"
    check: str = "*"
    params: Mapping[str, Any] = field(default_factory=dict)
    outcomes: tuple[str, ...] = FINDING_OUTCOMES
    link: str | None = None
    when: str | None = None
    strict: bool = True
    details: tuple[str, ...] = ()
    examples: int | None = None

    @property
    def label(self) -> str:
        """How messages name this entry: file, position and what it is about."""
        return (
            f"{self.source}: entry {self.index} ({self.rule}, {self.producer} -> {self.consumer})"
        )

    def in_scope(self, record: Mapping[str, Any]) -> bool:
        """True when `record` is one of the results this entry is about, whatever its outcome.
        A cell's skip record (no params: the cell could not run here) is in the scope of every
        entry about its producer, consumer and check, whatever params the entry names."""
        return self.in_cell(
            record.get("producer"), record.get("consumer"), record.get("check")
        ) and (
            (record.get("outcome") == SKIP and not record.get("params"))
            or all(
                _param_matches(record.get("params") or {}, path, pattern)
                for path, pattern in self.params.items()
            )
        )

    def in_cell(self, producer: Any, consumer: Any, check: Any) -> bool:
        """True when results of this producer, consumer and check can be in scope."""
        return (
            _glob(producer, self.producer)
            and _glob(consumer, self.consumer)
            and _glob(check, self.check)
        )

    def matches_finding(self, record: Mapping[str, Any]) -> bool:
        """True when `record` is a finding of the kind this entry expects (scope aside)."""
        if record.get("outcome") not in self.outcomes or not is_finding(record):
            return False
        if self.details:
            detail = outcome_detail(record)
            if not any(wildcard_match(detail, pattern) for pattern in self.details):
                return False
        if record.get("rule"):
            return _glob(record["rule"], self.rule)
        # a record without a rule (a crash, a refusal no rule explains) is matched on the rule
        # reports file it under (`caiconform.results.filing`): its input's, else the one its failing
        # side had to honour; the empty string when there is none
        from caiconform.results.filing import candidate_rules

        return any(_glob(rule, self.rule) for rule in candidate_rules(record) or ("",))

    def active(self, version_of: VersionLookup) -> tuple[bool, str]:
        """Whether the `when` condition holds, and why not (for the report)."""
        if self.when is None:
            return True, ""
        from packaging.requirements import Requirement

        requirement = Requirement(self.when)
        version = version_of(requirement.name)
        if version is None:
            return False, f"when {self.when!r}: {requirement.name} version unknown"
        if requirement.specifier.contains(version, prereleases=True):
            return True, ""
        return False, f"when {self.when!r}: {requirement.name} is {version}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "source": self.source,
            "rule": self.rule,
            "reason": self.reason,
            "producer": self.producer,
            "consumer": self.consumer,
            "check": self.check,
            "params": dict(self.params),
            "outcome": list(self.outcomes),
            "link": self.link,
            "when": self.when,
            "strict": self.strict,
            "detail": list(self.details),
            "examples": self.examples,
        }


#: the longest detail pattern a baseline writes (longer details are cut and end in `*`)
DETAIL_LIMIT = 160
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_TYPESTR = re.compile(r"[<>|=][a-zA-Z]\d+")
_BRACKETED_NUMBERS = re.compile(r"[(\[][^()\[\]]*\d[^()\[\]]*[)\]]")
_TOKEN_WITH_DIGIT = re.compile(r"[\w.+-]*\d[\w.+-]*")
_EMPTY_BRACKETS = re.compile(r"\(\)|\[\]")
_STAR_RUN = re.compile(r"\*(?:[\s,]*\*)+")
#: the element values of a mismatch (`spec.values.compare_values`), its bytes' mark kept
_ELEMENT_VALUES = re.compile(r"(first at \*: got ).+?(, expected ).+?((?: \(bytes\))?)$")


def outcome_detail(record: Mapping[str, Any]) -> str:
    """What distinguishes one finding's failure mode, on one line: what the check saw (a
    refusal's `ExceptionType: message`, a mismatch, an accepted invalid dict), else the
    record's message (a crash's signal, a hang)."""
    seen = record.get("seen")
    text = str(seen) if seen not in (None, "") else str(record.get("message") or "")
    return " ".join(text.split())


def detail_pattern(detail: str) -> str:
    """A wildcard pattern (`wildcard_match`) matching `detail` and the same failure mode in
    other examples: addresses, typestrs, bracketed numbers (shapes, strides, indices), and
    every word holding a digit (numbers, `float32`, `v3`) become `*`; an empty `()` or `[]` (a
    0-d shape) too, and a mismatch's element values (`got np.True_, expected np.False_`); a
    run of stars is one star. Cut to `DETAIL_LIMIT` characters, ending in
    `*`. The pattern always matches the detail it was made from."""
    text = _HEX.sub("*", " ".join(detail.split()))
    text = _TYPESTR.sub("*", text)
    while True:
        shorter = _BRACKETED_NUMBERS.sub("*", text)
        if shorter == text:
            break
        text = shorter
    text = _TOKEN_WITH_DIGIT.sub("*", text)
    text = _STAR_RUN.sub("*", _EMPTY_BRACKETS.sub("*", text))
    text = _ELEMENT_VALUES.sub(r"\1*\2*\3", text)
    if len(text) > DETAIL_LIMIT:
        text = text[: DETAIL_LIMIT - 1].rstrip("*") + "*"
    return text


@functools.lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    """`*` any run of characters, `?` one character, everything else literal: no character
    classes, so `[0, *]` matches a JSON list starting with 0 without escaping."""
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.DOTALL)


def wildcard_match(text: str, pattern: str) -> bool:
    """True when the whole of `text` matches `pattern` (see `_compile`)."""
    return _compile(pattern).fullmatch(text) is not None


def _glob(value: Any, pattern: str) -> bool:
    return wildcard_match("" if value is None else str(value), pattern)


def _resolve(params: Any, path: str) -> tuple[bool, Any]:
    node = params
    for part in path.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif (
            isinstance(node, list | tuple)
            and part.lstrip("-").isdigit()
            and -len(node) <= int(part) < len(node)
        ):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def _value_matches(value: Any, pattern: Any) -> bool:
    if isinstance(pattern, str):
        text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
        return wildcard_match(text, pattern)
    if isinstance(pattern, bool) or isinstance(value, bool):
        return value is pattern
    return value == pattern


def _param_matches(params: Any, path: str, pattern: Any) -> bool:
    found, value = _resolve(params, path)
    if not found:
        return False
    if isinstance(pattern, list):
        return any(_value_matches(value, alternative) for alternative in pattern)
    return _value_matches(value, pattern)


# --- parsing --------------------------------------------------------------------------------


def _read(path: Path) -> Any:
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExpectationError(f"{path}: no such expectation file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpectationError(f"{path}: cannot read ({exc})") from None
    if suffix in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}: " if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ExpectationError(f"{path}: not valid YAML ({where}{problem})") from None
    if suffix == ".toml":
        if sys.version_info >= (3, 11):
            import tomllib
        else:
            import tomli as tomllib
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ExpectationError(f"{path}: not valid TOML ({exc})") from None
    raise ExpectationError(f"{path}: expectation files end in .yaml, .yml or .toml, not {suffix!r}")


def load_expectations(path: str | Path) -> list[Expectation]:
    """Parse and check an expectation file (YAML or TOML, by extension).

    Raises ExpectationError with one line naming the file, entry and field for anything wrong:
    unknown keys (a typo must not silently widen an entry), unknown rule IDs, a missing reason,
    a `when` that is not a version condition.
    """
    path = Path(path)
    try:
        data = _read(path)
    except RecursionError:  # the parsers' answer to very deep nesting
        raise ExpectationError(f"{path}: nested too deeply to be an expectation file") from None
    return parse_expectations(data, str(path))


def parse_expectations(data: Any, source: str = "<expectations>") -> list[Expectation]:
    """Check the parsed content of an expectation file; see `load_expectations`."""
    if not isinstance(data, Mapping):
        got = "an empty file" if data is None else type(data).__name__
        raise ExpectationError(
            f"{source}: expected a mapping with an 'expectations' list, got {got}"
        )
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ExpectationError(
            f"{source}: unknown top-level key {unknown[0]!r} (allowed: {', '.join(sorted(_TOP_KEYS))})"
        )
    if data.get("version", 1) != 1:
        raise ExpectationError(f"{source}: version {data['version']!r} is not supported (use 1)")
    entries = data.get("expectations")
    if entries is None:
        raise ExpectationError(f"{source}: no 'expectations' list")
    if not isinstance(entries, list):
        raise ExpectationError(
            f"{source}: 'expectations' must be a list, got {type(entries).__name__}"
        )
    return [_parse_entry(entry, index, source) for index, entry in enumerate(entries, start=1)]


def _parse_entry(entry: Any, index: int, source: str) -> Expectation:
    where = f"{source}: entry {index}"
    if not isinstance(entry, Mapping):
        raise ExpectationError(f"{where}: expected a mapping, got {type(entry).__name__}")
    if isinstance(entry.get("rule"), str):
        where = f"{where} ({entry['rule']})"

    def fail(key: str, problem: str) -> ExpectationError:
        return ExpectationError(f"{where}: field {key!r}: {problem}")

    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise fail(unknown[0], f"unknown field (allowed: {', '.join(sorted(_ENTRY_KEYS))})")
    for key in ("rule", "reason"):
        if key not in entry:
            raise fail(key, "missing (every entry needs a rule and a reason)")
    for key in ("rule", "reason", "producer", "consumer", "check", "link", "when"):
        if key in entry and not (isinstance(entry[key], str) and entry[key].strip()):
            raise fail(key, f"must be a non-empty string, got {entry[key]!r}")
    rule = entry["rule"]
    if _GLOB_CHARS & set(rule):
        if rule != "*" and not any(wildcard_match(rule_id, rule) for rule_id in RULES):
            raise fail("rule", f"pattern {rule!r} matches no rule in the catalogue")
    elif rule not in RULES:
        raise fail("rule", f"unknown rule ID {rule!r} (see `caiconform rules`)")
    check = entry.get("check", "*")
    if not _GLOB_CHARS & set(check) and check not in KNOWN_CHECKS:
        close = difflib.get_close_matches(check, KNOWN_CHECKS, n=1, cutoff=0.75)
        if close:
            raise fail(
                "check",
                f"unknown check {check!r}: did you mean {close[0]!r}? (known: "
                f"{', '.join(KNOWN_CHECKS)})",
            )
    params = entry.get("params", {})
    if not isinstance(params, Mapping) or not all(isinstance(k, str) and k for k in params):
        raise fail("params", "must map dotted parameter paths (strings) to patterns")
    outcomes = entry.get("outcome", list(FINDING_OUTCOMES))
    if isinstance(outcomes, str):
        outcomes = [outcomes]
    if not isinstance(outcomes, list) or not outcomes:
        raise fail("outcome", "must be an outcome or a list of outcomes")
    for outcome in outcomes:
        if outcome not in FINDING_OUTCOMES:
            raise fail(
                "outcome", f"{outcome!r} is not a finding outcome ({', '.join(FINDING_OUTCOMES)})"
            )
    strict = entry.get("strict", True)
    if not isinstance(strict, bool):
        raise fail("strict", f"must be true or false, got {strict!r}")
    when = entry.get("when")
    if when is not None:
        _check_when(when, fail)
    details = entry.get("detail", [])
    if isinstance(details, str):
        details = [details]
    if not isinstance(details, list) or not all(isinstance(d, str) and d.strip() for d in details):
        raise fail("detail", "must be a pattern or a list of patterns (non-empty strings)")
    examples = entry.get("examples")
    if examples is not None and (
        isinstance(examples, bool) or not isinstance(examples, int) or examples < 1
    ):
        raise fail("examples", f"must be a whole number of at least 1, got {examples!r}")
    return Expectation(
        index=index,
        source=source,
        rule=rule,
        reason=entry["reason"].strip(),
        producer=entry.get("producer", "*"),
        consumer=entry.get("consumer", "*"),
        check=check,
        params=dict(params),
        outcomes=tuple(outcomes),
        link=entry.get("link"),
        when=when,
        strict=strict,
        details=tuple(" ".join(d.split()) for d in details),
        examples=examples,
    )


def _check_when(when: str, fail: Callable[[str, str], ExpectationError]) -> None:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(when)
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0]
        raise fail(
            "when", f"{when!r} is not a version condition like 'torch<2.12' ({first})"
        ) from None
    if requirement.marker or requirement.url or requirement.extras or not requirement.specifier:
        raise fail(
            "when", f"{when!r}: give a library name and version specifiers only, like 'torch<2.12'"
        )


# --- versions -------------------------------------------------------------------------------


def env_versions(env: Mapping[str, Any]) -> dict[str, str]:
    """Library versions recorded in a run's env.json (`libraries`: distribution -> version, or
    None when absent), keyed by canonical distribution name.

    A name without an exact entry also finds the one distribution named `<name>-...`, so a
    condition may say `cupy<14` for `cupy-cuda13x` (see `lookup_version`).
    """
    versions: dict[str, str] = {}
    for name, version in (env.get("libraries") or {}).items():
        if isinstance(version, str):
            versions[_canonical(name)] = version
    return versions


def lookup_version(versions: Mapping[str, str], name: str) -> str | None:
    """`versions[name]`, or the version of the only distribution whose name starts with
    `name-` (cupy -> cupy-cuda13x); None when there is none or more than one."""
    key = _canonical(name)
    if key in versions:
        return versions[key]
    prefixed = [v for dist, v in versions.items() if dist.startswith(key + "-")]
    return prefixed[0] if len(prefixed) == 1 else None


@functools.lru_cache(maxsize=1)
def _installed() -> dict[str, str]:
    from caiconform.env import library_versions

    return env_versions({"libraries": library_versions()})


def installed_version(name: str) -> str | None:
    """The version of distribution `name` in this Python environment, found as in a run's
    env.json (so `cupy` finds `cupy-cuda13x`); any other installed distribution by its name."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return lookup_version(_installed(), name)


# --- applying -------------------------------------------------------------------------------


@dataclass
class RecordVerdict:
    """A journal record and what the expectations make of it (`pass`, `skip`, `xfail`, `fail`);
    `entry` is the covering entry of an `xfail`."""

    record: Mapping[str, Any]
    status: str
    entry: Expectation | None = None


@dataclass
class EntryStatus:
    """What happened to one entry: `xfail`, `xpass`, `unmatched`, `inactive` or `unjudged`,
    with counts of results in its scope and of findings it covered."""

    entry: Expectation
    status: str
    in_scope: int = 0
    covered: int = 0
    note: str = ""

    @property
    def is_error(self) -> bool:
        return self.entry.strict and self.status in ("xpass", "unmatched")

    def describe(self) -> str:
        """One line for the terminal and the report."""
        what = {
            "xfail": f"expected failure seen {self.covered} time(s)",
            "xpass": f"expected failure did not happen in {self.in_scope} result(s) in scope "
            "(fixed? delete the entry)",
            "unmatched": "matches no result (stale entry, or a library/check not in this run)",
            "inactive": f"not applied ({self.note})",
            "unjudged": "not judged: only skipped results in scope",
        }[self.status]
        prefix = "error" if self.is_error else "note"
        return f"{prefix}: {self.entry.label}: {what}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry.to_dict(),
            "status": self.status,
            "in_scope": self.in_scope,
            "covered": self.covered,
            "note": self.note,
            "error": self.is_error,
        }


@dataclass
class Application:
    """The result of applying a list of expectations to a set of records."""

    records: list[RecordVerdict]
    entries: list[EntryStatus]

    @property
    def unexpected(self) -> list[RecordVerdict]:
        """Findings no entry covers (a `shrunk` record repeats a class already counted)."""
        return [v for v in self.records if v.status == "fail" and not v.record.get("shrunk")]

    @property
    def expected(self) -> list[RecordVerdict]:
        return [v for v in self.records if v.status == "xfail" and not v.record.get("shrunk")]

    @property
    def entry_errors(self) -> list[EntryStatus]:
        return [s for s in self.entries if s.is_error]

    @property
    def ok(self) -> bool:
        """No unexpected finding and no strict entry that passed or matched nothing."""
        return not self.unexpected and not self.entry_errors


def classify(
    entries: Iterable[Expectation], record: Mapping[str, Any], version_of: VersionLookup
) -> RecordVerdict:
    """The verdict on one record: the first active entry in scope that expects its finding."""
    if is_correct_rejection(record):
        return RecordVerdict(record, "pass")
    outcome = record.get("outcome")
    if outcome not in FINDING_OUTCOMES:
        return RecordVerdict(record, str(outcome))
    for entry in entries:
        if entry.in_scope(record) and entry.matches_finding(record) and entry.active(version_of)[0]:
            return RecordVerdict(record, "xfail", entry)
    return RecordVerdict(record, "fail")


def apply_expectations(
    entries: Iterable[Expectation],
    records: Iterable[Mapping[str, Any]],
    version_of: Callable[[Mapping[str, Any]], VersionLookup] | None = None,
) -> Application:
    """Classify every record and every entry (see the module docstring).

    `version_of(record)` returns the version lookup for the run a record came from (by default
    the versions installed in this process), so a merged report of two torch versions applies
    `when: "torch<2.12"` to each run by its own version.
    """
    entries = list(entries)
    lookup = version_of or (lambda record: installed_version)
    verdicts: list[RecordVerdict] = []
    statuses = {entry.index: EntryStatus(entry, "unmatched") for entry in entries}
    active_scope = {entry.index: 0 for entry in entries}
    judged = {entry.index: 0 for entry in entries}  # active results in scope, skips left out
    notes: dict[int, str] = {}
    by_cell: dict[tuple, list[Expectation]] = {}  # the entries that can apply to a cell's results
    for record in records:
        cell = (record.get("producer"), record.get("consumer"), record.get("check"))
        if cell not in by_cell:
            by_cell[cell] = [entry for entry in entries if entry.in_cell(*cell)]
        versions = lookup(record)
        verdict = classify(by_cell[cell], record, versions)
        verdicts.append(verdict)
        for entry in by_cell[cell]:
            if not entry.in_scope(record):
                continue
            status = statuses[entry.index]
            status.in_scope += 1
            is_active, why = entry.active(versions)
            if not is_active:
                notes.setdefault(entry.index, why)
                continue
            active_scope[entry.index] += 1
            judged[entry.index] += record.get("outcome") != SKIP
            if entry.matches_finding(record):
                status.covered += 1
    for entry in entries:
        status = statuses[entry.index]
        if status.in_scope == 0:
            status.status = "unmatched"
        elif active_scope[entry.index] == 0:
            status.status, status.note = "inactive", notes.get(entry.index, "")
        elif status.covered:
            status.status = "xfail"
        elif judged[entry.index] == 0:
            status.status = "unjudged"
        else:
            status.status = "xpass"
    return Application(verdicts, list(statuses.values()))
