"""The user's side of the exchange: `module:attr` specs, the functions they name, and the name
the user's library goes by in records, reports and expectation files.

Signatures (docs/ci.md):
- producer factory: `factory(values: np.ndarray, layout: Layout, typestr: str,
  stream_scenario: str) -> object` exposing `__cuda_array_interface__` whose logical elements
  equal `values`, laid out at `layout` where the library can (a contiguous copy is fine where it
  cannot); raise `caiconform.adapters.base.SkipExchange(reason)` for what it cannot make.
- consumer function: `function(obj) -> np.ndarray`: import `obj` through the library's own CAI
  path and return its logical values on the host.

What a producer claims is read from what it makes: `sample_exports` asks the factory for one
small array and looks at the object, so a factory whose objects have no `__dlpack__` is judged
over the CUDA Array Interface only.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TargetError",
    "Target",
    "Sample",
    "parse_spec",
    "resolve",
    "default_name",
    "sample_exports",
]

_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class TargetError(ValueError):
    """A `--cai-producer`/`--cai-consumer` value that cannot be used; one line for the user."""


def parse_spec(option: str, spec: str) -> str:
    """Check the `module:attr` form early, so a typo is reported before anything runs."""
    if not _SPEC.match(spec):
        raise TargetError(f"{option}: expected 'module:function', got {spec!r}")
    return spec


def resolve(spec: str) -> Callable[..., Any]:
    """The callable `spec` names (`pkg.mod:attr`, `attr` may be dotted). Raises TargetError
    naming the spec and what failed."""
    module_name, _, attr = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # whatever the user's import raises, report it as one line
        raise TargetError(
            f"{spec}: cannot import {module_name}: {type(exc).__name__}: {exc}"
        ) from None
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise TargetError(f"{spec}: {module_name} has no attribute {attr!r}") from None
    if not callable(target):
        raise TargetError(f"{spec}: {type(target).__name__} object is not callable")
    return target


def default_name(spec: str) -> str:
    """The user's library name: the top-level package of the spec's module."""
    return spec.partition(":")[0].split(".", 1)[0]


@dataclass(frozen=True)
class Target:
    """What the options say about the user's library: its name and its two functions."""

    name: str
    producer: str | None = None
    consumer: str | None = None
    #: `function(obj) -> np.ndarray` importing `obj` over DLPack (`--cai-dlpack-consumer`)
    dlpack_consumer: str | None = None
    #: `function(obj, *, copy=None, device=None) -> the library's array` (`--cai-from-dlpack`)
    from_dlpack: str | None = None


#: the arrays a factory is asked for, in turn, to learn what its objects export: the first it
#: makes is the sample (a factory may skip any typestr it has no arrays of)
SAMPLE_TYPESTRS = ("<f4", "<i4", "|u1", "<f8", "<i8", "<u2")


@dataclass(frozen=True)
class Sample:
    """What the factory's objects export, read from one object it made (`sample_exports`)."""

    #: the object's type and the array asked for, e.g. "fakelib.FakeArray for <f4 (4,)"; or
    #: why no object could be made
    description: str
    #: which protocols' exports (`Protocol.export`: `__dlpack__`, ...) the object has; None
    #: when no object could be made (not known)
    exports: frozenset[str] | None


def sample_exports(factory: Callable[..., Any]) -> Sample:
    """Ask `factory` for a 4-element array of each of SAMPLE_TYPESTRS until it makes one, and
    say which protocols' exports that object has. An attribute that raises anything but
    AttributeError counts as present: that protocol's families judge what it does. A factory
    that makes none (it skips or raises for each, e.g. without a GPU) gives `exports=None`."""
    import numpy as np

    from caiconform.spec.layout import Layout
    from caiconform.spec.protocols import PROTOCOLS

    failures = []
    for typestr in SAMPLE_TYPESTRS:
        try:
            obj = factory(np.arange(4).astype(typestr), Layout((4,)), typestr, "none")
        except Exception as exc:  # SkipExchange, or anything the user's factory raises
            failures.append(f"{typestr}: {type(exc).__name__}: {exc}")
            continue
        kind = type(obj)
        description = f"a {kind.__module__}.{kind.__qualname__} made for {typestr} (4,)"
        return Sample(description, frozenset(p.export for p in PROTOCOLS if _has(obj, p.export)))
    return Sample(f"the factory made no sample array ({'; '.join(failures)})", None)


def _has(obj: Any, name: str) -> bool:
    """Whether `obj` has attribute `name`; one that raises anything but AttributeError is
    present, and its protocol's families say what is wrong with it."""
    try:
        return hasattr(obj, name)
    except Exception:
        return True
