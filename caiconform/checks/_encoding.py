"""Interface dicts as JSON and back (`encode`, `decode`), keeping tuples and lists apart (a list
where the spec wants a tuple is itself a finding), and the objects a decoded dict stands in:
`InterfaceObject` (exposes exactly the dict it was given), `RaisingInterface` (its attribute
raises), `Opaque` (exposes nothing). Families draw their params in the parent and run them in a
worker, so every interface dict travels this way.
"""

from __future__ import annotations

from typing import Any


class InterfaceObject:
    """An object whose `__cuda_array_interface__` is exactly the dict it was given.

    Adversarial and version checks hand consumers dicts no library would produce; `keepalive`
    holds whatever owns the memory the dict points into, so the pointer stays valid for as long
    as the consumer may use this object (the spec leaves that to the user).
    """

    def __init__(self, interface: Any, keepalive: Any = None) -> None:
        self._interface = interface
        self.keepalive = keepalive

    @property
    def __cuda_array_interface__(self) -> Any:
        return self._interface

    def __repr__(self) -> str:
        return f"InterfaceObject({self._interface!r})"


class RaisingInterface:
    """An object whose interface attribute raises something other than AttributeError (what a
    broken producer does); stands in for such an object decoded from params."""

    @property
    def __cuda_array_interface__(self) -> dict:
        raise RuntimeError("reading __cuda_array_interface__ failed")


class Opaque:
    """An object exposing nothing, decoded from params (e.g. a mask that is no array)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


def encode(value: Any) -> Any:
    """A JSON-able form of an interface dict that `decode` turns back into an equal value.

    Tuples become `{"$tuple": [...]}`, dicts `{"$dict": [[key, value], ...]}` (keys need not be
    strings in an adversarial dict), bytes `{"$bytes": hex}`; an object exposing the interface
    (a mask) becomes `{"$cai": <its dict>}`, one whose attribute raises `{"$raising": name}`
    and any other object `{"$opaque": its type name}`.
    """
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"$dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    try:
        interface = value.__cuda_array_interface__
    except AttributeError:
        return {"$opaque": type(value).__name__}
    except Exception:  # a producer whose attribute raises: keep that behaviour
        return {"$raising": type(value).__name__}
    return {"$cai": encode(interface)}


def decode(value: Any) -> Any:
    """Inverse of `encode`; `$cai` becomes an `InterfaceObject`."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$tuple" in value:
        return tuple(decode(v) for v in value["$tuple"])
    if "$dict" in value:
        return {_hashable(decode(k)): decode(v) for k, v in value["$dict"]}
    if "$bytes" in value:
        return bytes.fromhex(value["$bytes"])
    if "$cai" in value:
        return InterfaceObject(decode(value["$cai"]))
    if "$raising" in value:
        return RaisingInterface()
    if "$opaque" in value:
        return Opaque(value["$opaque"])
    raise ValueError(f"not an encoded value: {value!r}")


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key
