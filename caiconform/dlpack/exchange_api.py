"""Read a type's DLPack C exchange API table (`__dlpack_c_exchange_api__`, DLPack 1.3) without
calling any of its functions.

dlpack.h: the attribute "must be set on the type as a Python PyCapsule with name
"dlpack_exchange_api"", and "the consumer should look up the attribute on the type".
`read_exchange_api(obj_or_type)` does that lookup (on `type(obj)`, unless given a type),
checks the capsule's name, and reads the `DLPackExchangeAPI` it points to
(`caiconform.dlpack.header`): its version, the address of each of its five functions (0 for
NULL), and the chain of older tables its header's `prev_api` links, walked at most
`MAX_CHAIN` links and never twice through one table. What it cannot read raises
`ExchangeAPIError` with a one-line reason. Calling the functions is the checks' job: a
function pointer read here is an address, nothing more.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from caiconform.dlpack.capsule import capi, capsule_name
from caiconform.dlpack.errors import DLPackError
from caiconform.dlpack.header import (
    EXCHANGE_API_ATTRIBUTE,
    EXCHANGE_API_ENTRIES,
    EXCHANGE_API_NAME,
    DLPackExchangeAPI,
    DLPackExchangeAPIHeader,
)

__all__ = ["ExchangeAPI", "ExchangeAPIError", "read_exchange_api", "MAX_CHAIN"]

#: the most `prev_api` links followed: a longer chain is cut there (a table that points back
#: into its own chain is stopped at the repeat)
MAX_CHAIN = 16

_is_valid = capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_get_pointer = capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)


class ExchangeAPIError(DLPackError):
    """The type has no readable exchange API table; the message says why."""


@dataclass(frozen=True)
class ExchangeAPI:
    """What a type's `DLPackExchangeAPI` says: `address` (the table's), `version` (major,
    minor of its header), the address of each function (0 for NULL), `prev` the older
    tables its `prev_api` chain links, as (address, (major, minor)), nearest first, and
    `prev_cut` why the walk stopped before a NULL link ("" when the chain ends in NULL)."""

    address: int
    version: tuple[int, int]
    managed_tensor_allocator: int
    managed_tensor_from_py_object_no_sync: int
    managed_tensor_to_py_object_no_sync: int
    dltensor_from_py_object_no_sync: int
    current_work_stream: int
    prev: tuple[tuple[int, tuple[int, int]], ...]
    prev_cut: str = ""

    @property
    def entries(self) -> dict[str, int]:
        """The five functions' addresses by their dlpack.h field names, in the table's order."""
        return {name: getattr(self, name) for name, _ in EXCHANGE_API_ENTRIES}


def read_exchange_api(obj_or_type: Any) -> ExchangeAPI:
    """The exchange API table of `obj_or_type` (a type, or an object whose type is read).

    ExchangeAPIError when the type has no `__dlpack_c_exchange_api__`, has it only on the
    instance, or holds something other than a PyCapsule named "dlpack_exchange_api".
    """
    kind = obj_or_type if isinstance(obj_or_type, type) else type(obj_or_type)
    try:
        held = getattr(kind, EXCHANGE_API_ATTRIBUTE)
    except AttributeError:
        on_instance = kind is not obj_or_type and _instance_has(obj_or_type)
        where = " (it is set on the instance only)" if on_instance else ""
        raise ExchangeAPIError(
            f"{kind.__qualname__} has no {EXCHANGE_API_ATTRIBUTE} on the type{where}"
        ) from None
    except Exception as exc:  # noqa: BLE001 - a failing lookup is the type's, reported
        raise ExchangeAPIError(
            f"{kind.__qualname__}.{EXCHANGE_API_ATTRIBUTE} raised {type(exc).__name__}: {exc}"
        ) from None
    name = capsule_name(held)
    if name is None:
        raise ExchangeAPIError(
            f"{kind.__qualname__}.{EXCHANGE_API_ATTRIBUTE} is a {type(held).__name__}, "
            f"not a PyCapsule"
        )
    if not _is_valid(held, EXCHANGE_API_NAME):
        raise ExchangeAPIError(
            f"{kind.__qualname__}.{EXCHANGE_API_ATTRIBUTE} is a capsule named "
            f"{name.decode(errors='replace')!r}, expected {EXCHANGE_API_NAME.decode()!r}"
        )
    address = int(_get_pointer(held, EXCHANGE_API_NAME) or 0)
    if not address:
        raise ExchangeAPIError(f"{kind.__qualname__}.{EXCHANGE_API_ATTRIBUTE} holds NULL")
    table = DLPackExchangeAPI.from_address(address)
    prev, cut = _chain(table.header, address)
    return ExchangeAPI(
        address=address,
        version=_version(table.header),
        prev=prev,
        prev_cut=cut,
        **{name: _address(getattr(table, name)) for name, _ in EXCHANGE_API_ENTRIES},
    )


def _instance_has(obj: Any) -> bool:
    """Whether the instance's own namespace holds the attribute (a lookup past the type)."""
    try:
        return EXCHANGE_API_ATTRIBUTE in vars(obj)
    except TypeError:  # no __dict__
        return False


def _version(header: DLPackExchangeAPIHeader) -> tuple[int, int]:
    return int(header.version.major), int(header.version.minor)


def _address(function: Any) -> int:
    """A function pointer field's address, 0 for NULL."""
    return int(ctypes.cast(function, ctypes.c_void_p).value or 0)


def _chain(
    header: DLPackExchangeAPIHeader, address: int
) -> tuple[tuple[tuple[int, tuple[int, int]], ...], str]:
    """(the tables `header.prev_api` links, nearest first: at most MAX_CHAIN, each once; why
    the walk stopped before a NULL link, "" when it reached one)."""
    seen, out = {address}, []
    link = header.prev_api
    while link:
        at = ctypes.cast(link, ctypes.c_void_p).value or 0
        if at in seen:
            return tuple(out), f"prev_api {at:#x} points back into the chain"
        if len(out) == MAX_CHAIN:
            return tuple(out), f"longer than {MAX_CHAIN} tables"
        seen.add(at)
        older = link.contents
        out.append((at, _version(older)))
        link = older.prev_api
    return tuple(out), ""
