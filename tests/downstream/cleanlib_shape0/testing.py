"""cleanlib's functions with one planted consumer bug: `to_host` counts the rows it reads from
the first dimension of the dict's shape, which a 0-d array has not (an IndexError)."""

from __future__ import annotations

import numpy as np

from tests.downstream.cleanlib.testing import make_array

__all__ = ["ROWS_READ", "make_array", "to_host"]

#: rows read so far (cleanlib's statistics)
ROWS_READ = [0]


def to_host(obj) -> np.ndarray:
    """Read any CAI object through CuPy, counting its rows first (the planted bug)."""
    import cupy

    ROWS_READ[0] += obj.__cuda_array_interface__["shape"][0]  # assumes ndim >= 1
    return cupy.asarray(obj).get()
