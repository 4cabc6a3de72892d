"""cleanlib's functions with one planted bug: a view (an array that does not start at its
allocation's base) exports the base pointer as its data pointer."""

from __future__ import annotations

import numpy as np

from caiconform.spec.layout import Layout
from tests.downstream.cleanlib.testing import SkipExchange, allocate, to_host

__all__ = ["make_array", "to_host"]


class View:
    """A view that exports the wrong data pointer (the bug) and keeps its memory alive."""

    def __init__(self, base, view) -> None:
        self._base, self._view = base, view
        interface = dict(view.__cuda_array_interface__)
        if view.data.ptr != base.data.ptr:
            interface["data"] = (base.data.ptr, interface["data"][1])  # the planted bug
        self.__cuda_array_interface__ = interface


def make_array(values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str):
    if stream_scenario != "none":
        raise SkipExchange("cleanlib exports synchronized arrays only")
    return View(*allocate(values, layout, typestr))
