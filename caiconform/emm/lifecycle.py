"""Numba's side of the plugin's lifecycle: does Numba hand each lifecycle call to the plugin?

The EMM text ("Implementing an EMM Plugin") gives the plugin methods Numba calls on its own:
"The EMM Plugin is transparent to any code that uses Numba - all its methods are invoked by
Numba". Besides allocation (`paths.py`) and ``initialize`` (`paths.PathChecks`, judged from
every call the context's instance received), each lifecycle method is routed to the plugin:

- ``reset`` "is called when all allocations in the context are to be cleaned up": a context's
  ``reset()`` calls the plugin's ``reset`` [EMM-NUMBA-RESET-ROUTED];
- ``get_memory_info`` "provides a count of the total and free memory on the device for the
  context": a context's ``get_memory_info()`` is the plugin's answer, or the plugin's exception
  [EMM-NUMBA-MEMORY-INFO-ROUTED];
- ``get_ipc_handle`` is "part of the EMM interface (rather than being handled within Numba)
  because the base address of the allocation is only known by the underlying library": a
  device array's ``get_ipc_handle()`` wraps the handle the plugin made for that array's memory
  [EMM-NUMBA-IPC-ROUTED];
- ``initialize`` "is called by Numba prior to the first use of the EMM Plugin object for a
  context": also for a second device's context, made after the plugin was set, whose instance
  must see ``initialize`` before any other call (needs two GPUs) [EMM-INITIALIZE-BEFORE-USE];
- ``interface_version`` "is used to ensure that the plugin version matches the interface
  provided by the version of Numba": ``set_memory_manager`` refuses a plugin whose version is
  not 1 and keeps the manager it had [EMM-NUMBA-INTERFACE-VERSION-CHECKED].

How it is seen: a spy set on the context's plugin instance (an instance attribute, so Numba's
``self.memory_manager.<method>(...)`` finds it first) records each call, its arguments and
what the plugin returned or raised. Everything takes the `cuda` namespace, so CPU tests run the
same checks against a synthetic Numba-like host.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from caiconform.emm.result import CheckResult, failed, passed, skipped

__all__ = [
    "ROUTED",
    "BAD_VERSIONS",
    "Spy",
    "spy",
    "LifecycleChecks",
    "check_interface_version_rejected",
]

#: (check, rule, plugin method) of each routing check, in the order `LifecycleChecks.run` runs
#: them; reset last, since it cleans up every allocation of the context.
ROUTED = (
    ("memory-info-routed", "EMM-NUMBA-MEMORY-INFO-ROUTED", "get_memory_info"),
    ("ipc-handle-routed", "EMM-NUMBA-IPC-ROUTED", "get_ipc_handle"),
    ("initialize-other-context", "EMM-INITIALIZE-BEFORE-USE", "initialize"),
    ("reset-routed", "EMM-NUMBA-RESET-ROUTED", "reset"),
)
#: interface versions set_memory_manager must refuse (the text: "this should always be 1")
BAD_VERSIONS = (0, 2)
VERSION_RULE = "EMM-NUMBA-INTERFACE-VERSION-CHECKED"


@dataclass
class Spy:
    """The calls a spied method received: (args, what it returned, what it raised)."""

    calls: list[tuple[tuple, Any, BaseException | None]] = field(default_factory=list)


@contextmanager
def spy(instance: Any, name: str) -> Iterator[Spy]:
    """Record every call of `instance.name` while the block runs, then remove the spy."""
    seen = Spy()
    method = getattr(instance, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = method(*args, **kwargs)
        except BaseException as exc:
            seen.calls.append((args, None, exc))
            raise
        seen.calls.append((args, result, None))
        return result

    setattr(instance, name, wrapper)
    try:
        yield seen
    finally:
        delattr(instance, name)


def _address(memory: Any) -> int:
    pointer = getattr(memory, "device_pointer", None)
    value = getattr(pointer, "value", pointer)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


class LifecycleChecks:
    """The routing checks on the context's plugin instance; each result goes to `emit`.

    `cuda` is the `numba.cuda` namespace (or a synthetic one); `plugin_in_use` False (Numba's
    own manager) makes every check a skip, as in `paths.PathChecks`. `calls` gives every
    (method, id of the instance) the plugin class received so far (`paths.Recorder.calls`).
    """

    def __init__(
        self,
        cuda: Any,
        emit: Callable[[CheckResult], None],
        *,
        plugin_in_use: bool = True,
        calls: Callable[[], list[tuple[str, int]]] | None = None,
    ) -> None:
        self.cuda = cuda
        self.emit = emit
        self.plugin_in_use = plugin_in_use
        self.calls = calls

    def run(self, which: tuple[str, ...] | None = None) -> None:
        """The checks of ROUTED named in `which` (all by default); an exception Numba or the
        plugin raises where none is expected is that check's failure."""
        bodies = {
            "memory-info-routed": self._memory_info,
            "ipc-handle-routed": self._ipc_handle,
            "initialize-other-context": self._initialize_other_context,
            "reset-routed": self._reset,
        }
        for check, rule, method in ROUTED:
            if which is not None and check not in which:
                continue
            if not self.plugin_in_use:
                self.emit(
                    skipped(
                        check,
                        rule,
                        "Numba's own memory manager: no EMM plugin is in use, so the rule "
                        "does not apply",
                    )
                )
                continue
            try:
                bodies[check]()
            except Exception as exc:
                self.emit(
                    failed(
                        check,
                        rule,
                        f"{type(exc).__name__}: {exc}",
                        f"the call handed to the plugin's {method}",
                    )
                )

    def _manager(self) -> tuple[Any, Any]:
        ctx = self.cuda.current_context()
        return ctx, ctx.memory_manager

    def _not_called(self, check: str, rule: str, api: str, method: str) -> None:
        self.emit(
            failed(
                check,
                rule,
                f"{api} returned without calling the plugin's {method}",
                f"{api} handled by the plugin's {method}",
            )
        )

    def _memory_info(self) -> None:
        check, rule = "memory-info-routed", "EMM-NUMBA-MEMORY-INFO-ROUTED"
        ctx, mgr = self._manager()
        raised: BaseException | None = None
        got = None
        with spy(mgr, "get_memory_info") as seen:
            try:
                got = ctx.get_memory_info()
            except Exception as exc:
                raised = exc
        if not seen.calls:
            self._not_called(check, rule, "Context.get_memory_info()", "get_memory_info")
            return
        _, returned, plugin_raised = seen.calls[-1]
        if plugin_raised is not None:
            if raised is plugin_raised:
                self.emit(
                    passed(check, rule, f"the plugin's {type(raised).__name__} reached the caller")
                )
            else:
                self.emit(
                    failed(
                        check,
                        rule,
                        f"the plugin raised {type(plugin_raised).__name__}, the caller got "
                        f"{type(raised).__name__ if raised else repr(got)}",
                        "the plugin's exception",
                    )
                )
            return
        if raised is None and (got is returned or got == returned):
            self.emit(passed(check, rule, f"the plugin's answer {returned!r}"))
        else:
            what = f"{type(raised).__name__}: {raised}" if raised else repr(got)
            self.emit(failed(check, rule, what, f"the plugin's answer {returned!r}"))

    def _ipc_handle(self) -> None:
        import numpy as np

        check, rule = "ipc-handle-routed", "EMM-NUMBA-IPC-ROUTED"
        _, mgr = self._manager()
        array = self.cuda.device_array(4096, np.uint8)
        address = _address(array.gpu_data)
        raised: BaseException | None = None
        handle = None
        with spy(mgr, "get_ipc_handle") as seen:
            try:
                handle = array.get_ipc_handle()
            except Exception as exc:
                raised = exc
        if not seen.calls:
            if raised is not None:
                raise raised
            self._not_called(check, rule, "DeviceNDArray.get_ipc_handle()", "get_ipc_handle")
            return
        args, returned, plugin_raised = seen.calls[-1]
        asked = _address(args[0]) if args else 0
        inner = getattr(handle, "_ipc_handle", handle)
        if asked == address and plugin_raised is not None and raised is plugin_raised:
            # routed: the plugin's refusal (judged by EMM-IPC-HANDLE) reached the caller
            self.emit(
                passed(check, rule, f"the plugin's {type(raised).__name__} reached the caller")
            )
        elif raised is not None:
            raise raised
        elif asked != address:
            self.emit(
                failed(
                    check,
                    rule,
                    f"the plugin was asked about memory at 0x{asked:x}",
                    f"the array's memory at 0x{address:x}",
                )
            )
        elif inner is not returned:
            self.emit(
                failed(
                    check,
                    rule,
                    f"the array's handle holds {type(inner).__qualname__}, not the plugin's",
                    "the IpcHandle the plugin returned",
                )
            )
        else:
            self.emit(passed(check, rule, f"the plugin's IpcHandle for 0x{address:x}"))

    def _initialize_other_context(self) -> None:
        check, rule = "initialize-other-context", "EMM-INITIALIZE-BEFORE-USE"
        if self.calls is None or len(self.cuda.gpus) < 2:
            why = "no record of the plugin's calls" if self.calls is None else "one GPU"
            self.emit(skipped(check, rule, f"needs a second device's context ({why})"))
            return
        import numpy as np

        with self.cuda.gpus[1]:
            self.cuda.device_array(16, np.uint8)
            mgr = self.cuda.current_context().memory_manager
        mine = [name for name, owner in self.calls() if owner == id(mgr)]
        if mine and mine[0] == "initialize":
            self.emit(passed(check, rule, f"device 1's instance, first calls {mine[:3]}"))
        else:
            self.emit(
                failed(
                    check,
                    rule,
                    f"device 1's instance received {mine[:3] or 'no call'}",
                    "initialize first",
                )
            )

    def _reset(self) -> None:
        check, rule = "reset-routed", "EMM-NUMBA-RESET-ROUTED"
        ctx, mgr = self._manager()
        with spy(mgr, "reset") as seen:
            ctx.reset()
        if seen.calls:
            self.emit(
                passed(
                    check,
                    rule,
                    f"Context.reset() called the plugin's reset ({len(seen.calls)} call(s))",
                )
            )
        else:
            self._not_called(check, rule, "Context.reset()", "reset")


def _with_version(plugin: type, version: Any) -> type:
    """A subclass of `plugin` whose interface_version is `version`, nothing else changed."""
    return type(
        f"{plugin.__name__}Version{version}",
        (plugin,),
        {"interface_version": property(lambda self: version), "__module__": plugin.__module__},
    )


def check_interface_version_rejected(plugin: type, api: Any) -> CheckResult:
    """set_memory_manager refuses the plugin with each of BAD_VERSIONS and keeps the manager it
    had; whatever it did, the previous choice is restored."""
    check = "interface-version-rejected"
    accepted, changed, refusals = [], [], []
    for version in BAD_VERSIONS:
        bad = _with_version(plugin, version)
        previous = api.get_manager()
        try:
            api.set_memory_manager(bad)
        except Exception as exc:
            refusals.append(f"{version}: {type(exc).__name__}")
            if api.get_manager() is not previous:
                changed.append(str(version))
        else:
            accepted.append(str(version))
        finally:
            api.restore_manager(previous)
    if accepted:
        return failed(
            check,
            VERSION_RULE,
            f"set_memory_manager accepted interface_version {', '.join(accepted)}",
            "a RuntimeError for any version but 1",
        )
    if changed:
        return failed(
            check,
            VERSION_RULE,
            f"refused interface_version {', '.join(changed)} but installed the plugin anyway",
            "the previous memory manager kept",
        )
    return passed(check, VERSION_RULE, f"refused ({'; '.join(refusals)}); previous manager kept")
