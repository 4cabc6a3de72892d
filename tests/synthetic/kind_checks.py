"""A synthetic family whose drawn examples have kinds: each names one of three mutations, as the
adversarial family's drawn examples do, so the runner's cap on lost drawn examples of one kind
(`config.DRAWN_CRASH_CAP`) is visible; every example of mutation `m-t` leaves its worker
untrusted (`taints`), which the cap counts too. Its examples reuse
`tests.synthetic.checks.execute`: the producer name chooses how an example misbehaves from
n >= THRESHOLD on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from caiconform.results.outcome import Result
from tests.synthetic.checks import execute, healthy  # noqa: F401 - the family contract

if TYPE_CHECKING:  # workers import the family to run examples; only the parent draws them
    from hypothesis import strategies as st

FAMILY = "synthetic-kinds"
ROLES = "producer"
NEEDS_GPU = False
#: each drawn example is a mutation of its own kind, as adversarial's are: all of them run
SATURATES = False


def examples(producer: str, consumer: str | None) -> st.SearchStrategy[dict]:
    from hypothesis import strategies as st

    return st.fixed_dictionaries(
        {"n": st.integers(0, 1000), "mutation": st.sampled_from(["m-a", "m-b", "m-t"])}
    )


def taints(params: dict, result: Result) -> bool:
    return params.get("mutation") == "m-t"
