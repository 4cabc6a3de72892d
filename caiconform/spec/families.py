"""The names of the check families, and of the adversarial family's live mutations with the rule
each breaks: names, with no behaviour.

They live here, below everything that runs or judges an exchange, because the layers below the
check families read them: `results.expectations` validates an expectation entry's check against
`FAMILIES`, `results.filing` files a live mutation's record under the rule in `LIVE`, and
`spec.rule_coverage` counts both. The families themselves are `caiconform.checks` (`load`), and
the live mutations are built by `caiconform.checks.adversarial`.
"""

from __future__ import annotations

__all__ = ["FAMILIES", "LIVE"]

#: Every family, in the order a run goes through them (cheap, dict-only checks first).
FAMILIES = (
    "schema",
    "zero_size",
    "roundtrip",
    "versions",
    "readonly",
    "aliasing",
    "mask",
    "adversarial",
    "streams",
    "lifetime",
    "devices",
    "agreement",
    "dlpack_lifetime",
    "dlpack_adversarial",
    "dlpack_roundtrip",
    "dlpack_versions",
    "dlpack_copy",
    "dlpack_streams",
)

#: the adversarial family's live mutation -> the rule it breaks (None: legal, a consumer must
#: read it or refuse it for a portability reason)
LIVE: dict[str, str | None] = {
    "host-pointer": "CAI-DATA-DEVICE-ACCESSIBLE",
    "extent-past-allocation": "CAI-DATA-EXTENT-IN-ALLOCATION",
    "stream-bogus": "CAI-STREAM-LIVE",
    "object-fields": None,
    "odd-strides": None,
    "negative-strides": None,
    "broadcast": None,
}
