"""The parent <-> worker wire format: one JSON object per line.

JSON keeps the protocol readable in a log and free of pickle's import-by-name surprises; values a
check returns (numpy scalars, arrays, bytes) are turned into plain JSON here rather than failing
the exchange, because a `seen` value that cannot be encoded is still worth reporting.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["encode", "decode", "jsonable", "canonical"]

#: longest repr kept for a value JSON cannot hold
_REPR_LIMIT = 500


def jsonable(value: Any) -> Any:
    """`json.dumps` fallback: numpy scalars and small arrays become numbers and lists, anything
    else its (shortened) repr."""
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:
        return item()
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and getattr(value, "size", _REPR_LIMIT + 1) <= 64:
        return tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


def encode(message: dict[str, Any]) -> bytes:
    """One protocol line (UTF-8, newline-terminated)."""
    return (json.dumps(message, default=jsonable, separators=(",", ":")) + "\n").encode()


def decode(line: bytes) -> dict[str, Any]:
    """The message of one protocol line."""
    return json.loads(line)


def canonical(params: Any) -> str:
    """A stable key for an example's params: the same params give the same key whether they come
    from hypothesis (tuples) or from a journal (lists)."""
    return json.dumps(params, sort_keys=True, default=jsonable, separators=(",", ":"))
