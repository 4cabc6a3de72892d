"""A synthetic family whose drawn params name nothing the runner's crash cap counts by (as the
devices family's), but whose module says what kind they are (`crash_kind`): every drawn
example is one kind. Its examples are `tests.synthetic.checks`'s (the producer name chooses how
an example misbehaves from n >= THRESHOLD on)."""

from __future__ import annotations

from tests.synthetic.checks import examples, execute, healthy  # noqa: F401 - the family contract

FAMILY = "synthetic-one-kind"
ROLES = "producer"
NEEDS_GPU = False
KIND = "drawn examples of one kind"


def crash_kind(params: dict) -> str:
    return KIND
