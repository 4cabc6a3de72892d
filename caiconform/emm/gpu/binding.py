"""The plugin bound to its context, and Numba allocating through it: one instance per context
kept when the manager changes, every allocation path through the plugin (in this process, and in
a fresh one where the plugin is set as a user sets it), Numba's own arrays through memalloc."""

from __future__ import annotations

import multiprocessing
import os
import pickle
from typing import Any

import numpy as np

from caiconform.emm.gpu.base import (
    GpuCheckBase,
)
from caiconform.emm.paths import PATHS, PathChecks, Recorder
from caiconform.emm.result import CheckResult, failed, passed, skipped


def _fresh_main(
    module_name: str,
    qualname: str,
    via_env: bool,
    blob: bytes | None,
    conn,
    numba: str = "numba-cuda",
) -> None:
    """Spawned by the fresh-process check: the plugin set the way a user would (through
    ``NUMBA_CUDA_MEMORY_MANAGER=<module>`` in this process's environment from its start when the
    module names the class as ``_numba_memory_manager``, else with set_memory_manager before any
    context), then every allocation path, IPC open included (the handle came from another
    process), all under Numba implementation `numba` (`adapters.numba_impls`; numba-cuda-mlir's
    `core/config.py` reads the same variable). Sends the results' dicts."""
    out: list[dict] = []
    try:
        import importlib

        module = importlib.import_module(module_name)
        plugin: Any = module
        for part in qualname.split("."):
            plugin = getattr(plugin, part)
        from caiconform.adapters.numba_impls import IMPLS

        cuda = IMPLS[numba].import_cuda()
        driver = IMPLS[numba].submodule("cudadrv.driver").driver
        recorder = Recorder(plugin, driver).install()
        if not via_env:
            cuda.set_memory_manager(plugin)
        route = "NUMBA_CUDA_MEMORY_MANAGER" if via_env else "set_memory_manager (fresh process)"
        mgr = cuda.current_context().memory_manager
        if via_env:
            value = os.environ.get("NUMBA_CUDA_MEMORY_MANAGER")
            if type(mgr) is plugin:
                out.append(passed("env-variable", "EMM-SET-ENV", f"={value}").to_dict())
            else:
                out.append(
                    failed(
                        "env-variable", "EMM-SET-ENV", type(mgr).__qualname__, plugin.__qualname__
                    ).to_dict()
                )
        PathChecks(cuda, recorder, route, lambda r: out.append(r.to_dict())).run(blob)
    except Exception as exc:
        out.append(
            failed(
                "fresh-process",
                "EMM-NUMBA-NO-DIRECT-ALLOC",
                f"{type(exc).__name__}: {exc}",
                "the paths checked",
            ).to_dict()
        )
    conn.send(out)
    conn.close()


class BindingChecks(GpuCheckBase):
    """One instance per context; Numba's allocations go through the plugin."""

    def _check_binding(self) -> None:
        mgr, ctx = self.mgr, self.ctx
        same = self.cuda.current_context().memory_manager is mgr
        if type(mgr) is self.plugin and mgr.context is ctx and same:
            self.emit(
                passed(
                    "one-instance-per-context",
                    "EMM-ONE-INSTANCE-PER-CONTEXT",
                    f"{type(mgr).__qualname__} bound to {ctx!r}",
                )
            )
        else:
            self.emit(
                failed(
                    "one-instance-per-context",
                    "EMM-ONE-INSTANCE-PER-CONTEXT",
                    f"{type(mgr).__qualname__}, context {mgr.context!r}, same={same}",
                    f"{self.plugin.__qualname__} bound to {ctx!r}, one instance",
                )
            )
        previous = self.api.get_manager()
        try:
            self.api.set_memory_manager(self.api.default_manager)
            kept = self.cuda.current_context().memory_manager is mgr
        finally:
            self.api.restore_manager(previous)
        if kept:
            self.emit(
                passed(
                    "context-bound",
                    "EMM-CONTEXT-BOUND",
                    "existing context kept its instance after set_memory_manager",
                )
            )
        else:
            self.emit(
                failed(
                    "context-bound",
                    "EMM-CONTEXT-BOUND",
                    "instance replaced",
                    "existing context keeps its instance",
                )
            )

    def _check_paths(self) -> None:
        """Every Numba allocation path through the plugin set with set_memory_manager in this
        process (`paths.PathChecks`); IPC open is judged in the fresh process."""
        why = self._not_a_plugin()
        if why:
            for path, _ in PATHS:
                self.emit(
                    skipped(f"path:{path} via set_memory_manager", "EMM-NUMBA-NO-DIRECT-ALLOC", why)
                )
            return
        PathChecks(self.cuda, self.recorder, "set_memory_manager", self.emit).run(None)

    def _check_fresh_process(self) -> None:
        """The paths again in a spawned process where the plugin is set as a user would:
        ``NUMBA_CUDA_MEMORY_MANAGER=<module>`` (the exact module name the user gave) when the
        module names the class, else set_memory_manager; an IPC handle exported here is opened
        there."""
        why = self._not_a_plugin()
        if why:
            self.emit(skipped("env-variable", "EMM-SET-ENV", why))
            return
        if not self.via_env:
            self.emit(
                skipped(
                    "env-variable",
                    "EMM-SET-ENV",
                    f"module {self.target[0]}'s _numba_memory_manager is not this class",
                )
            )
        blob = None
        mem = self.mgr.memalloc(4096)
        try:
            blob = pickle.dumps(self.mgr.get_ipc_handle(mem))
        except Exception as exc:
            self.emit(
                skipped(
                    "path:ipc-open",
                    "EMM-NUMBA-NO-DIRECT-ALLOC",
                    f"no IPC handle to open: {type(exc).__name__}: {exc}",
                )
            )
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe(duplex=False)
        saved = os.environ.pop("NUMBA_CUDA_MEMORY_MANAGER", None)
        if self.via_env:
            os.environ["NUMBA_CUDA_MEMORY_MANAGER"] = self.target[0]
        try:
            args = (*self.target, self.via_env, blob, child, self.api.implementation)
            proc = ctx.Process(target=_fresh_main, args=args)
            proc.start()
        finally:
            os.environ.pop("NUMBA_CUDA_MEMORY_MANAGER", None)
            if saved is not None:
                os.environ["NUMBA_CUDA_MEMORY_MANAGER"] = saved
        child.close()
        try:
            if not parent.poll(300):
                raise RuntimeError("the fresh process sent nothing within 300 s")
            for data in parent.recv():
                self.emit(CheckResult.from_dict(data))
        except EOFError:
            raise RuntimeError(f"the fresh process died (exit code {proc.exitcode})") from None
        finally:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
        del mem

    def _check_numba_uses_plugin(self) -> None:
        mgr = self.mgr
        seen: list[int] = []
        original = mgr.memalloc

        def counting(size: int):
            mem = original(size)
            seen.append(int(mem.device_pointer))
            return mem

        mgr.memalloc = counting
        try:
            arr = self.cuda.device_array(1000, dtype=np.uint8)
            ptr = int(arr.device_ctypes_pointer.value)
        finally:
            del mgr.memalloc
        if seen == [ptr]:
            self.emit(
                passed(
                    "numba-uses-plugin",
                    "EMM-NUMBA-NO-DIRECT-ALLOC",
                    "cuda.device_array went through memalloc",
                )
            )
        else:
            self.emit(
                failed(
                    "numba-uses-plugin",
                    "EMM-NUMBA-NO-DIRECT-ALLOC",
                    f"memalloc returned {seen}, array at {ptr}",
                    "one memalloc call returning the array's pointer",
                )
            )
