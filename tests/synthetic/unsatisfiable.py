"""A family whose examples cannot be drawn (every draw filtered out): hypothesis gives up."""

from __future__ import annotations

from hypothesis import strategies as st


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"n": st.integers()}).filter(lambda _: False)
