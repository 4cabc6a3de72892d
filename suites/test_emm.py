"""EMM plugin conformance suite: every checked rule of every plugin, one pytest item each.

Plugins come from ``CAICONFORM_EMM_PLUGINS`` (comma-separated ``module:Class``); by default
Numba's own manager, the reference plugin in both modes, and RMM's plugin. Each plugin runs
once, in a spawned process of its own (`caiconform.emm.checker.check_plugin`); the items then
judge its results rule by rule. A MUST failure fails the item; a SHOULD failure is a warning.
A default plugin whose module is not installed (RMM, often) is skipped with that reason; one
named in the variable fails instead.

Run it on a GPU machine: ``python -m pytest suites/test_emm.py``. Every item is marked `gpu`:
without a GPU each skips saying so; without Numba, with the reason the checker gives.
"""

from __future__ import annotations

import functools
import os
import warnings

import pytest

from caiconform.cuda import gpu_available
from caiconform.emm.checker import JUDGED_RULES, check_plugin
from caiconform.emm.result import PluginReport

HAVE_GPU, NO_GPU_REASON = gpu_available()
#: every item needs a GPU: on a CPU machine each is skipped at collection, saying why
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAVE_GPU, reason=f"needs an NVIDIA GPU: {NO_GPU_REASON}"),
]

DEFAULT_PLUGINS = (
    "numba.cuda.cudadrv.driver:NumbaCUDAMemoryManager",
    "caiconform.reference.emm:ReferenceDirectManager",
    "caiconform.reference.emm:ReferencePoolManager",
    "rmm.allocators.numba:RMMNumbaManager",
)

_chosen = os.environ.get("CAICONFORM_EMM_PLUGINS", "")
PLUGINS = tuple(p.strip() for p in _chosen.split(",") if p.strip()) or DEFAULT_PLUGINS


@functools.cache
def report_for(target: str) -> PluginReport:
    return check_plugin(target)


@pytest.mark.parametrize("rule", JUDGED_RULES)
@pytest.mark.parametrize("plugin", PLUGINS)
def test_emm_rule(plugin: str, rule: str) -> None:
    __tracebackhide__ = True
    report = report_for(plugin)
    if report.status == "usage":
        if plugin in DEFAULT_PLUGINS and not _chosen:
            pytest.skip(f"{plugin}: {report.reason}")
        pytest.fail(f"{plugin}: {report.reason}")
    results = [r for r in report.results if r.rule == rule]
    ran = [r for r in results if r.outcome != "skip"]
    if not ran:
        why = results[0].message if results else "no check of this rule applies to this plugin"
        pytest.skip(f"{plugin} {rule}: {why}")
    bad = [r for r in ran if r.outcome != "pass"]
    must = [r for r in bad if r.must_failure]
    if must:
        pytest.fail("\n".join(r.message for r in must), pytrace=False)
    for r in bad:
        warnings.warn(f"{plugin}: {r.message}", stacklevel=1)
