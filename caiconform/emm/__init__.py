"""The EMM plugin conformance checker: does a Numba External Memory Management plugin keep the
contract of `external_memory_management.rst`?

`checker.check_plugin("module:Class")` runs every check in a spawned process of its own (the
plugin, Numba and CUDA never load in the caller) and returns a `PluginReport`; `static` holds
the checks that need no GPU, `checks` the ones that do (`GpuChecks`, one mixin per contract area
from `gpu`). Numba is imported only in that process.
"""

from caiconform.emm.result import CheckResult, PluginReport

__all__ = ["CheckResult", "PluginReport"]
