"""What the DLPack readers raise: `DLPackError`, a reason in one line.

Its own module so that every reader of the package (capsules, devices, elements, the exchange
API) can raise it without importing another reader.
"""

from __future__ import annotations

__all__ = ["DLPackError"]


class DLPackError(ValueError):
    """The object's DLPack export could not be read; the message says why."""
