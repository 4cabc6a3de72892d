"""Outcome classes and the `Result` a check's `execute` returns.

The outcome says *what kind* of thing happened in one exchange, so a report can tell a finding
against the spec (`fail`) from a library that refused cleanly (`rejected`) or one that took the
process down (`crash`, `hang`, `poisoned`). The last three are never returned by a check: the
runner assigns them when the worker process dies, times out or is left with a sticky CUDA error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "OUTCOMES",
    "PASS",
    "FAIL",
    "REJECTED",
    "ACCEPTED_INVALID",
    "CRASH",
    "HANG",
    "POISONED",
    "SKIP",
    "ISOLATION_OUTCOMES",
    "Result",
]

PASS = "pass"
#: a finding against a rule (the rule ID is in `Result.rule`)
FAIL = "fail"
#: a clean Python exception: right for invalid input, an interop gap for valid input
REJECTED = "rejected"
#: invalid input that the consumer took without complaint
ACCEPTED_INVALID = "accepted-invalid"
#: the worker process died (abort, segfault, os._exit, killed)
CRASH = "crash"
#: the example ran past its timeout
HANG = "hang"
#: the example left a sticky CUDA error (or a failed health hook) behind
POISONED = "poisoned"
#: the capability is absent; `Result.message` is the reason
SKIP = "skip"

OUTCOMES = (PASS, FAIL, REJECTED, ACCEPTED_INVALID, CRASH, HANG, POISONED, SKIP)

#: outcomes only the runner assigns, because the worker could not report them itself
ISOLATION_OUTCOMES = frozenset({CRASH, HANG, POISONED})


@dataclass
class Result:
    """What one exchange ended in.

    Parameters
    ----------
    outcome: one of `OUTCOMES`.
    rule: the rule ID a `fail` / `accepted-invalid` / `rejected` is about, or None.
    message: one line; for `fail` it ends in `[RULE-ID]`, for `skip` it is the reason.
    seen, expected: short strings (or JSON-able values) for the report.
    repro: relative path of the reproducer script, filled in by the runner.
    culprit: {"library", "role", "why"} when the check itself established which library is at
        fault and that is not the side the rule binds (journaled as the record's `culprit`).
    """

    outcome: str
    rule: str | None = None
    message: str = ""
    seen: Any = None
    expected: Any = None
    repro: str | None = None
    culprit: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")

    @property
    def ok(self) -> bool:
        """True for outcomes that need no reproducer (pass, skip)."""
        return self.outcome in (PASS, SKIP)

    def to_dict(self) -> dict[str, Any]:
        """A dict with the field names of the journal record (shallow: built once per example,
        where `dataclasses.asdict`'s deep copy would cost more than the rest of the answer)."""
        return {
            "outcome": self.outcome,
            "rule": self.rule,
            "message": self.message,
            "seen": self.seen,
            "expected": self.expected,
            "repro": self.repro,
            "culprit": self.culprit,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Inverse of `to_dict`; unknown keys are ignored so journal records can be passed."""
        return cls(
            **{k: data.get(k) for k in ("rule", "seen", "expected", "repro", "culprit")},
            outcome=data["outcome"],
            message=data.get("message") or "",
        )
