"""What the validator reports: one `Finding` per broken rule, gathered in a `Report`.

A finding names the rule it breaks, where in the dict it was seen, what was seen and what the
rule expects, so that a message alone tells a library author what to fix and where the spec says
so. The message format is fixed (`<path>: got <seen>, expected <expected> [RULE-ID]`) because
reports, journals and test failures all show it verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass

from caiconform.spec.rules import RULES, Level, level_text

__all__ = ["Finding", "Report", "finding", "format_message", "WHOLE_OBJECT"]

#: How a finding about the whole object (path "") is shown in its message.
WHOLE_OBJECT = "__cuda_array_interface__"


def format_message(rule: str, path: str, seen: str, expected: str) -> str:
    """The one-line message of a finding: `<path>: got <seen>, expected <expected> [RULE-ID]`."""
    return f"{path or WHOLE_OBJECT}: got {seen}, expected {expected} [{rule}]"


@dataclass(frozen=True, slots=True)
class Finding:
    """One broken rule. `level` and `section` come from the catalogue entry of `rule`."""

    rule: str
    level: Level
    path: str
    seen: str
    expected: str
    message: str
    section: str

    def to_dict(self) -> dict:
        return {
            "rule": self.rule,
            "level": self.level.value,
            "level_text": level_text(self.rule, self.level.value),
            "path": self.path,
            "seen": self.seen,
            "expected": self.expected,
            "message": self.message,
            "section": self.section,
        }


def finding(rule: str, path: str, seen: str, expected: str) -> Finding:
    """A `Finding` for catalogue rule `rule`; KeyError for an ID the catalogue lacks, so that no
    message can cite a rule that does not exist."""
    entry = RULES[rule]
    return Finding(
        rule,
        entry.level,
        path,
        seen,
        expected,
        format_message(rule, path, seen, expected),
        entry.section,
    )


@dataclass(slots=True)
class Report:
    """The verdict on one export. `version` is the CAI version it was judged against.

    `ok` is True when no MUST-level rule is broken: SHOULD and PORTABILITY findings are
    warnings, MAY findings are information (what a consumer of that version cannot rely on).
    """

    target: str
    version: int
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return not any(f.level is Level.MUST for f in self.findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level is Level.MUST]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.level in (Level.SHOULD, Level.PORTABILITY)]

    @property
    def rules(self) -> set[str]:
        """IDs of every rule with a finding."""
        return {f.rule for f in self.findings}

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "version": self.version,
            "ok": self.ok,
            "findings": [f.to_dict() for f in self.findings],
        }
