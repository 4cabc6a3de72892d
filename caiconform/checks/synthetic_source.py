"""An adapter source offering the pseudo-library `synthetic`, which needs no GPU.

The runner takes its libraries from an *adapter source* (`caiconform.runner.libraries` by
default). This one offers a single producer, `synthetic`, for the `schema` family: its examples
are hypothesis-drawn interface dicts, judged by the validator alone, so the schema cells run on
a machine without a GPU (`RunConfig(adapter_source="caiconform.checks.synthetic_source")`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["names", "probe"]


def names() -> list[str]:
    return ["synthetic"]


def probe(name: str) -> dict[str, Any]:
    if name != "synthetic":
        return {"name": name, "available": False, "reason": f"unknown library {name!r}"}
    import caiconform

    return {
        "name": name,
        "available": True,
        "reason": "",
        "version": caiconform.__version__,
        "capabilities": ["produce-dicts"],
        "needs_gpu": False,
    }
