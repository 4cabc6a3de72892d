"""Values and layouts shared by the GPU adapter tests and the adapter probe."""

from __future__ import annotations

import numpy as np

from caiconform.checks.dlpack_consumer import TYPESTRS
from caiconform.spec.layout import Layout, f_strides

__all__ = ["sample_values", "layouts", "DTYPES"]

#: the typestrs the probe tries with every producer and consumer: the common ones every DLPack
#: consumer reads (dlpack_consumer's), and one of the other byte order
DTYPES = (*TYPESTRS, ">i4")


def sample_values(shape: tuple[int, ...], typestr: str, broadcast_axis: int | None = None):
    """Distinct, exactly representable values of `typestr` (equal along `broadcast_axis`)."""
    dtype = np.dtype(typestr)
    n = int(np.prod(shape))
    base = np.arange(n).reshape(shape)
    if broadcast_axis is not None and n:
        base = np.broadcast_to(np.take(base, [0], axis=broadcast_axis), shape)
    if dtype.kind == "b":
        values = base % 3 == 1
    elif dtype.kind == "u":
        values = base % 200 + 3
    elif dtype.kind == "i":
        values = base % 100 - 47
    elif dtype.kind == "f":
        values = base * 0.5 - 3.25
    else:
        values = base * 0.5 - 3.25 + 1j * (base % 7)
    return np.array(values, dtype=dtype, order="C")


def layouts(itemsize: int) -> dict[str, tuple[Layout, int | None]]:
    """name -> (layout, broadcast axis or None) for one item size."""
    s = itemsize
    return {
        "C": (Layout((4, 5)), None),
        "F": (Layout((4, 5), strides=f_strides((4, 5), s), kind="F"), None),
        "sliced": (
            Layout((3, 4), strides=(10 * s, 2 * s), offset=3 * s, pad=2 * s, kind="sliced"),
            None,
        ),
        "negative": (Layout((3, 4), strides=(-4 * s, s), offset=8 * s, kind="negative"), None),
        "broadcast": (Layout((3, 4), strides=(0, s), kind="broadcast"), 0),
        "odd": (Layout((3,), strides=(s + 1,), kind="odd", portable=False), None),
        "zero-size": (Layout((0, 3)), None),
        "0-d": (Layout(()), None),
        "4-d": (Layout((2, 2, 2, 3)), None),
    }
