"""What one EMM check found, and what one plugin's run found.

A `CheckResult` names the check, the rule it judges (an ID of `spec/_emm.py`), the rule's level,
and an outcome from `caiconform.results.outcome` (`pass`, `fail`, `skip`, or `crash` / `hang`
when the plugin's process died or stalled). Messages read "got X, expected Y [RULE-ID]".

A failure belongs to the side its rule binds: the plugin, or Numba (the EMM text's statements
about Numba's own behaviour, e.g. EMM-NUMBA-NO-DIRECT-ALLOC). A plugin is not failed for
Numba's defects: they are listed as Numba's (`PluginReport.numba_failures`), and count against
the target only when the target is Numba's own memory manager.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from caiconform.results.outcome import CRASH, FAIL, HANG, PASS, SKIP
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

    @property
    def culprit(self) -> str:
        """Who a failure of this check belongs to: "numba" for a rule about Numba's own
        behaviour, else "plugin" (a crash or hang under any check is the plugin's process)."""
        numba = get(self.rule).side.value == "numba" and self.outcome == FAIL
        return "numba" if numba else "plugin"

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
    def is_numba(self) -> bool:
        """Whether the target is Numba's own memory manager: Numba's failures are its own."""
        top = self.target.split(":", 1)[0].split(".", 1)[0]
        return top in ("numba", "numba_cuda", "numba_cuda_mlir")

    def counts_against(self, result: CheckResult) -> bool:
        """Whether `result` is a MUST failure of the target (not one of Numba's, for a plugin)."""
        return result.must_failure and (self.is_numba or result.culprit == "plugin")

    @property
    def ok(self) -> bool:
        return self.status != "usage" and not any(self.counts_against(r) for r in self.results)

    @property
    def numba_failures(self) -> list[CheckResult]:
        """MUST failures that are Numba's, seen while checking a plugin (empty for Numba's own
        manager, whose failures are the target's)."""
        return [r for r in self.results if r.must_failure and not self.counts_against(r)]

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
            "must_failures": sum(self.counts_against(r) for r in self.results),
            "numba_must_failures": len(self.numba_failures),
            "environment": self.environment,
            "results": [{**r.to_dict(), "culprit": r.culprit} for r in self.results],
        }
