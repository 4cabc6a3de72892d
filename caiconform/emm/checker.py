"""Run the EMM checks of one plugin class in a spawned process of its own, and report.

Isolation first (docs/internals.md, Isolation): the plugin, Numba and CUDA load only in the child, which
sends each result the moment it has it. A child that dies or stalls leaves a `crash` or `hang`
result on the check it was running; everything learned before stays. Numba's memory-manager
choice is process state, so each plugin gets a fresh process and the caller's choice is never
touched; inside the child the checks restore whatever they change.

The child registers the plugin with ``numba.cuda.set_memory_manager``; a further spawned process
checks Numba's allocation paths again with the plugin set through ``NUMBA_CUDA_MEMORY_MANAGER``
(the module name the user gave) when the module names the class as ``_numba_memory_manager``.

`numba` picks the Numba implementation (`adapters.numba_impls`): numba-cuda, or numba-cuda-mlir,
whose `numba_cuda_mlir/numba_cuda/cudadrv/driver.py` keeps numba-cuda's `set_memory_manager`,
`_ensure_memory_manager` (reading `config.CUDA_MEMORY_MANAGER`, set from the same
NUMBA_CUDA_MEMORY_MANAGER in its `core/config.py`) and `Driver` object, so both routes and every
allocation path are checked the same way under it. A plugin is checked against the chosen
implementation's base classes: one written for numba-cuda (deriving from `numba.cuda`'s) is not
a subclass of numba-cuda-mlir's [EMM-SUBCLASS]; caiconform's reference plugin
(`caiconform.reference.emm`) derives from the chosen one's (``CAICONFORM_EMM_NUMBA_PACKAGE``,
set for the plugin's process and those it spawns).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import multiprocessing
import os
import time
from typing import Any

from caiconform.emm.result import CheckResult, PluginReport
from caiconform.results.outcome import CRASH, HANG, SKIP

__all__ = [
    "check_plugin",
    "parse_target",
    "exit_code",
    "nothing_checked",
    "NOT_CHECKED",
    "GPU_CHECKS",
    "STATIC_CHECKS",
    "JUDGED_RULES",
    "default_numba",
]

#: The static checks, as (check, rule), for saying what was skipped when Numba is missing.
STATIC_CHECKS = (
    ("subclass", "EMM-SUBCLASS"),
    ("construct", "EMM-CONSTRUCT-NO-CUDA"),
    ("interface-version", "EMM-INTERFACE-VERSION"),
    ("set-memory-manager", "EMM-SET-FUNCTION"),
    ("defer-documented", "EMM-DEFER-CLEANUP-DOCUMENTED"),
    ("interface-version-rejected", "EMM-NUMBA-INTERFACE-VERSION-CHECKED"),
)

#: The GPU check groups, as (check, rule), in the order the child runs them.
GPU_CHECKS = (
    ("binding", "EMM-ONE-INSTANCE-PER-CONTEXT"),
    ("allocation-paths", "EMM-NUMBA-NO-DIRECT-ALLOC"),
    ("fresh-process", "EMM-SET-ENV"),
    ("numba-uses-plugin", "EMM-NUMBA-NO-DIRECT-ALLOC"),
    ("memalloc", "EMM-ALLOC-VALID"),
    ("memalloc-impossible", "EMM-ALLOC-VALID"),
    ("finalizer", "EMM-POINTER-FINALIZER"),
    ("host-memory", "EMM-ALLOC-POINTER-OBJECT"),
    ("memory-info", "EMM-MEMORYINFO-TYPE"),
    ("ipc", "EMM-IPC-HANDLE"),
    ("ipc-cai-import", "EMM-IPCHANDLE-OFFSET"),
    ("lifecycle-routing", "EMM-NUMBA-IPC-ROUTED"),
    ("defer-cleanup", "EMM-DEFER-CLEANUP"),
    ("initialize", "EMM-INITIALIZE-IDEMPOTENT"),
    ("reset-before-initialize", "EMM-RESET-BEFORE-INITIALIZE"),
    ("reset", "EMM-RESET-FREES"),
    ("reset-routed", "EMM-NUMBA-RESET-ROUTED"),
)


#: Every rule ID the checks can judge (static and GPU), in catalogue order.
JUDGED_RULES = (
    "EMM-NUMBA-NO-DIRECT-ALLOC",
    "EMM-DEFER-CLEANUP-DOCUMENTED",
    "EMM-SYNCHRONOUS",
    "EMM-SUBCLASS",
    "EMM-ONE-INSTANCE-PER-CONTEXT",
    "EMM-CONSTRUCT-NO-CUDA",
    "EMM-ALLOC-POINTER-OBJECT",
    "EMM-ALLOC-CURRENT-CONTEXT",
    "EMM-ALLOC-VALID",
    "EMM-INITIALIZE-BEFORE-USE",
    "EMM-INITIALIZE-PREPARES",
    "EMM-INITIALIZE-IDEMPOTENT",
    "EMM-RESET-FREES",
    "EMM-RESET-BEFORE-INITIALIZE",
    "EMM-NUMBA-RESET-ROUTED",
    "EMM-IPC-HANDLE",
    "EMM-NUMBA-IPC-ROUTED",
    "EMM-NUMBA-IPC-CLOSE",
    "EMM-MEMORY-INFO",
    "EMM-MEMORY-INFO-RAISES",
    "EMM-NUMBA-MEMORY-INFO-ROUTED",
    "EMM-DEFER-CLEANUP",
    "EMM-INTERFACE-VERSION",
    "EMM-NUMBA-INTERFACE-VERSION-CHECKED",
    "EMM-HOSTONLY-MEMALLOC",
    "EMM-HOSTONLY-RESET-SUPER",
    "EMM-HOSTONLY-DEFER-SUPER",
    "EMM-POINTER-MEMALLOC",
    "EMM-POINTER-MAPPED",
    "EMM-POINTER-PINNED",
    "EMM-POINTER-FINALIZER",
    "EMM-MEMORYINFO-TYPE",
    "EMM-IPCHANDLE-TYPE",
    "EMM-IPCHANDLE-BASE",
    "EMM-IPCHANDLE-HANDLE",
    "EMM-IPCHANDLE-SIZE",
    "EMM-IPCHANDLE-SOURCE-INFO",
    "EMM-IPCHANDLE-OFFSET",
    "EMM-IPC-OPEN-OTHER-PROCESS",
    "EMM-SET-ENV",
    "EMM-SET-FUNCTION",
    "EMM-CONTEXT-BOUND",
)


def parse_target(target: str) -> tuple[str, str]:
    """'pkg.mod:Class' -> ('pkg.mod', 'Class'); ValueError with the one line to show."""
    module, sep, qualname = target.partition(":")
    if not sep or not module or not qualname:
        raise ValueError(f"target must be 'module:Class', got {target!r}")
    return module, qualname


def _cuda_state() -> str:
    """The process's CUDA state, for telling whether a constructor made CUDA calls."""
    from cuda.bindings import driver as cu

    from caiconform.cuda.errors import call

    current = call(cu.cuCtxGetCurrent)
    active = []
    for ordinal in range(call(cu.cuDeviceGetCount)):
        _, on = call(cu.cuDevicePrimaryCtxGetState, call(cu.cuDeviceGet, ordinal))
        if on:
            active.append(ordinal)
    where = f"0x{int(current):x}" if current is not None and int(current) else "none"
    return f"current context {where}, active primary contexts {active}"


def _module_found(module_name: str, send) -> bool:
    """Whether the module exists, without importing it; sends a `usage` message if not."""
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError) as exc:
        send("usage", f"module {module_name!r} not found ({type(exc).__name__}: {exc})")
        return False
    if spec is None:
        send("usage", f"module {module_name!r} not found")
        return False
    return True


def default_numba() -> str:
    """The implementation emm-check uses when none is named: numba-cuda when installed, else
    numba-cuda-mlir when that is, else numba-cuda (whose absence the report then states)."""
    from caiconform.adapters.numba_impls import installed

    for name in ("numba-cuda", "numba-cuda-mlir"):
        if installed(name):
            return name
    return "numba-cuda"


def _child_main(target: str, setup: str | None, conn, numba: str = "numba-cuda") -> None:
    """Body of the plugin's process: resolve, check statically, then on the GPU."""

    def send(kind: str, payload: Any) -> None:
        conn.send((kind, payload))

    try:
        _child_run(target, setup, send, numba)
    finally:
        send("done", None)
        conn.close()


def _find_setup(setup: str, send):
    """The user's "module:function" (e.g. one that gives RMM a pool), or None after sending a
    `usage` message."""
    try:
        module_name, function = parse_target(setup)
        return getattr(importlib.import_module(module_name), function)
    except Exception as exc:
        send("usage", f"setup {setup!r} not usable: {type(exc).__name__}: {exc}")
        return None


def _child_run(target: str, setup: str | None, send, numba: str = "numba-cuda") -> None:
    from caiconform.adapters.numba_impls import IMPLS
    from caiconform.emm.static import NumbaEMM, NumbaUnavailable, static_checks

    module_name, qualname = parse_target(target)
    if not _module_found(module_name, send):
        return
    prepare = _find_setup(setup, send) if setup else None
    if setup and prepare is None:
        return
    try:
        api = NumbaEMM.load(numba)
        missing = ""
    except NumbaUnavailable as exc:
        api, missing = None, str(exc)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        if missing and isinstance(exc, ImportError) and (exc.name or "").startswith("numba"):
            send("unavailable", missing)
        else:
            send("usage", f"cannot import {module_name!r}: {type(exc).__name__}: {exc}")
        return
    plugin: Any = module
    for part in qualname.split("."):
        if not hasattr(plugin, part):
            send("usage", f"{module_name!r} has no attribute {qualname!r}")
            return
        plugin = getattr(plugin, part)
    if not inspect.isclass(plugin):
        send("usage", f"{target} is not a class (it is a {type(plugin).__name__})")
        return
    if api is None:
        send("unavailable", missing)
        return
    if prepare is not None:
        try:
            prepare()
        except Exception as exc:
            send("usage", f"setup {setup!r} failed: {type(exc).__name__}: {exc}")
            return
    via_env = getattr(module, "_numba_memory_manager", None) is plugin

    from caiconform.cuda.device import device_info, gpu_available

    gpu, why = gpu_available()
    env = {
        numba.replace("-", "_"): api.version,
        "numba_implementation": numba,
        "plugin_module": module_name,
        "registered_via": "set_memory_manager"
        + (" and NUMBA_CUDA_MEMORY_MANAGER (fresh process)" if via_env else ""),
        "setup": setup,
    }
    if gpu:
        env["gpu"] = device_info(0)
    send("environment", env)
    results, _ = static_checks(plugin, api, _cuda_state if gpu else None)
    for result in results:
        send("result", result.to_dict())
    if not gpu:
        send("unavailable", f"no GPU ({why}): GPU checks skipped")
        return

    driver = IMPLS[numba].submodule("cudadrv.driver").driver

    from caiconform.emm.checks import GpuChecks
    from caiconform.emm.paths import Recorder

    previous = api.get_manager()
    api.set_memory_manager(plugin)
    # installed before the context exists, so initialize's place among the calls is seen
    recorder = None if plugin is api.default_manager else Recorder(plugin, driver).install()
    try:
        checks = GpuChecks(
            plugin,
            api,
            lambda r: send("result", r.to_dict()),
            recorder=recorder,
            target=(module_name, qualname),
            via_env=via_env,
        )
        checks.run(on_start=lambda check, rule: send("start", (check, rule)))
    finally:
        if recorder is not None:
            recorder.uninstall()
        api.restore_manager(previous)


def check_plugin(
    target: str,
    *,
    timeout: float = 600.0,
    setup: str | None = None,
    numba: str = "numba-cuda",
) -> PluginReport:
    """Check one plugin class ("module:Class") in a spawned process; never raises for a bad
    target (the report's status is then "usage"). `setup` ("module:function") is called in that
    process before the plugin is registered, e.g. to configure the plugin's library. `numba`:
    the Numba implementation whose memory manager the plugin is checked under
    (`adapters.numba_impls.IMPLS`; ValueError for another name)."""
    from caiconform.adapters.numba_impls import IMPLS

    if numba not in IMPLS:
        raise ValueError(f"numba must be one of {sorted(IMPLS)}, got {numba!r}")
    report = PluginReport(target)
    try:
        parse_target(target)
    except ValueError as exc:
        report.status, report.reason = "usage", str(exc)
        return report
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(target, setup, child, numba))
    saved = os.environ.get("CAICONFORM_EMM_NUMBA_PACKAGE")
    os.environ["CAICONFORM_EMM_NUMBA_PACKAGE"] = IMPLS[numba].package
    try:
        proc.start()
    finally:
        if saved is None:
            os.environ.pop("CAICONFORM_EMM_NUMBA_PACKAGE", None)
        else:
            os.environ["CAICONFORM_EMM_NUMBA_PACKAGE"] = saved
    child.close()
    running: tuple[str, str] | None = None
    deadline = time.monotonic() + timeout
    finished = False
    while not finished:
        left = deadline - time.monotonic()
        if left <= 0 or not parent.poll(left):
            proc.kill()
            _add_isolation(report, running, HANG, f"no answer within {timeout:.0f} s")
            break
        try:
            kind, payload = parent.recv()
        except EOFError:
            proc.join(5)
            _add_isolation(report, running, CRASH, f"process died (exit code {proc.exitcode})")
            break
        if kind == "result":
            report.results.append(CheckResult.from_dict(payload))
        elif kind == "start":
            running = tuple(payload)
        elif kind == "environment":
            report.environment = payload
        elif kind in ("usage", "unavailable"):
            report.status, report.reason = kind, payload
        elif kind == "done":
            finished = True
    proc.join(10)
    if proc.is_alive():
        proc.kill()
    if report.status == "unavailable":
        _add_skips(report)
    return report


def _add_isolation(report: PluginReport, running, outcome: str, why: str) -> None:
    check, rule = running or ("process", "EMM-DEVICE-MEMORY")
    report.results.append(CheckResult(check, rule, outcome, f"{check}: {why} [{rule}]"))


def _add_skips(report: PluginReport) -> None:
    """Name every check that could not run, with the reason, so nothing is silently absent."""
    done = {r.check for r in report.results}
    static_done = any(r.rule in {rule for _, rule in STATIC_CHECKS} for r in report.results)
    pending = GPU_CHECKS if static_done else STATIC_CHECKS + GPU_CHECKS
    for check, rule in pending:
        if check not in done:
            report.results.append(CheckResult(check, rule, SKIP, report.reason))


#: The exit status when a plugin could not be checked at all (numba-cuda missing, say).
NOT_CHECKED = 3


def nothing_checked(report: PluginReport) -> bool:
    """Whether every result of a usable target is a skip: nothing was judged."""
    return report.status != "usage" and all(r.outcome == SKIP for r in report.results)


def exit_code(reports: list[PluginReport]) -> int:
    """2 if any target was unusable, else 1 if any MUST rule failed, else 3 (`NOT_CHECKED`) if
    some plugin had nothing checked (every check skipped), else 0."""
    if any(r.status == "usage" for r in reports):
        return 2
    if not all(r.ok for r in reports):
        return 1
    return NOT_CHECKED if any(nothing_checked(r) for r in reports) else 0
