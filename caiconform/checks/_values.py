"""The strategies of example values the check families share: seeds for `make_values` and plain
arrays. The values themselves, rebuilt from a seed and compared bit for bit, are
`caiconform.spec.values` (below the adapters, whose self-check makes and compares them too).
"""

from __future__ import annotations

#: Upper bound of the seeds examples draw: any value numpy's default_rng takes.
SEED_MAX = 2**32 - 1


def seeds():
    """Strategy for `make_values` seeds; shrinks towards 0."""
    from hypothesis import strategies as st

    return st.integers(0, SEED_MAX)


def plain_arrays():
    """Strategy for families whose example is one plain array (lifetime, readonly, devices):
    typestr, a nonzero C-contiguous shape (as a list, for JSON) and a seed; shrinks toward
    '|b1' of shape (1,)."""
    from hypothesis import strategies as st

    from caiconform import strategies as cst

    return st.fixed_dictionaries(
        {
            "typestr": cst.typestrs(),
            "shape": cst.shapes(min_dims=1, allow_zero=False).map(list),
            "seed": seeds(),
        }
    )
