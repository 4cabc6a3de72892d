"""A synthetic consumer family for the records' entry point: for consumer `good` each example
names an entry point in its params (as the aliasing family's do); for any other consumer the
params name none, so the record carries the consumer's default entry point."""

from __future__ import annotations

from hypothesis import strategies as st

from caiconform.results.outcome import PASS, Result

FAMILY = "synthetic-entry"
ROLES = "consumer"
NEEDS_GPU = False
#: the entry points `good` draws from
DRAWN = ("lib.view", "lib.copy")


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    if consumer == "good":
        return st.fixed_dictionaries({"n": st.integers(0, 3), "entry": st.sampled_from(DRAWN)})
    return st.fixed_dictionaries({"n": st.integers(0, 3)})


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    return Result(PASS, message=f"{consumer} took it")
