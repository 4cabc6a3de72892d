"""The error every layer raises for bad user input: `UsageError`.

It sits below every other module (it imports nothing of caiconform), so the runner, the commands
and the pytest plugin raise and catch the same class. The CLI (`caiconform.cli.main`) prints its
message as one line, `caiconform: error: ...`, and exits 2.
"""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(ValueError):
    """Bad user input: a target that cannot be found or read, a bad option value, a check,
    library or run directory that does not exist. The message is one line saying what was
    wrong."""
