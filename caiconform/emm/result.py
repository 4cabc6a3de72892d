"""What one EMM check found, and what one plugin's run found.

A `CheckResult` names the check, the rule it judges (an ID of `spec/_emm.py`), the rule's level,
and an outcome from `caiconform.runner.outcome` (`pass`, `fail`, `skip`, or `crash` / `hang`
when the plugin's process died or stalled). Messages read "got X, expected Y [RULE-ID]".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from caiconform.runner.outcome import CRASH, FAIL, HANG, PASS, SKIP
from caiconform.spec.rules import get

__all__ = ["CheckResult", "PluginReport", "passed", "failed", "skipped"]


@dataclass
class CheckResult:
    """One check of one plugin. `level` is the rule's (MUST / SHOULD / MAY)."""

    check: str
    rule: str
    outcome: str
    message: str = ""
    seen: Any = None
    expected: Any = None
    level: str = ""

    def __post_init__(self) -> None:
        if not self.level:
            self.level = get(self.rule).level.value

    @property
    def must_failure(self) -> bool:
        """A failed MUST rule, or a process that died or hung under a MUST check."""
        return self.level == "MUST" and self.outcome in (FAIL, CRASH, HANG)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckResult:
        return cls(**data)


def passed(check: str, rule: str, seen: Any = None, note: str = "") -> CheckResult:
    return CheckResult(check, rule, PASS, note, seen)


def failed(check: str, rule: str, seen: Any, expected: Any, context: str = "") -> CheckResult:
    where = f", {context}" if context else ""
    message = f"{check}: got {seen}, expected {expected}{where} [{rule}]"
    return CheckResult(check, rule, FAIL, message, seen, expected)


def skipped(check: str, rule: str, reason: str) -> CheckResult:
    return CheckResult(check, rule, SKIP, reason)


@dataclass
class PluginReport:
    """Everything learned about one plugin class.

    `status` is "checked" (results are meaningful), "unavailable" (Numba or the GPU is missing:
    `reason` says which, and the results that could run are kept), or "usage" (the target does
    not name an importable class: `reason` is the one line to print).
    """

    target: str
    status: str = "checked"
    reason: str = ""
    results: list[CheckResult] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status != "usage" and not any(r.must_failure for r in self.results)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            out[r.outcome] = out.get(r.outcome, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "status": self.status,
            "reason": self.reason,
            "ok": self.ok,
            "counts": self.counts(),
            "environment": self.environment,
            "results": [r.to_dict() for r in self.results],
        }
