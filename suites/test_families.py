"""Every check family of every protocol, read from the family catalogue
(`caiconform.spec.families.CATALOGUE`): one item per family and cell, `test_family[roundtrip:cupy->torch]`.

An item judges its cell by the session's one run (see suites/conftest.py): it fails for a group
of the verdict at or above --suite-fail-on with an example in the cell, warns for the others,
and skips, with the runner's reason, when no example of the cell ran. A family added to the
catalogue has its items here without a line of its own; what an item judges is its catalogue
entry's `judges`, repeated in its failure message.
"""

from __future__ import annotations

import pytest


@pytest.mark.gpu
def test_family(suite, family_cell) -> None:
    family, cell = family_cell
    suite.check(family, cell)
