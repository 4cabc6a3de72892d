"""IPC: get_ipc_handle's handle (its type, offset and size), opened in this process and in
another process spawned for it, and a handle of an array imported through the CUDA Array
Interface."""

from __future__ import annotations

import multiprocessing
import os
import pickle
from typing import Any

import numpy as np

from caiconform.emm.gpu.base import (
    GpuCheckBase,
    allocation_range,
    pattern,
)
from caiconform.emm.result import failed, passed


def _importer_main(items: list[tuple[str, bytes, bytes]], conn, numba: str = "numba-cuda") -> None:
    """Spawned by the IPC check: open each pickled IpcHandle with Numba (implementation `numba`,
    `adapters.numba_impls`), read it, close it.

    Handles are opened one at a time, so two sub-allocations of one driver allocation are never
    mapped twice at once in this process.
    """
    out: dict[str, str] = {}
    try:
        from caiconform.adapters.numba_impls import IMPLS

        cuda = IMPLS[numba].import_cuda()
        DeviceNDArray = IMPLS[numba].submodule("cudadrv.devicearray").DeviceNDArray  # noqa: N806
        ctx = cuda.current_context()
        for name, blob, expected in items:
            try:
                handle = pickle.loads(blob)
                mem = handle.open(ctx)
                view = DeviceNDArray((handle.size,), (1,), np.uint8, gpu_data=mem)
                data = view.copy_to_host().tobytes()
                del view, mem
                handle.close()
                if data == expected:
                    out[name] = "ok"
                else:
                    bad = next(
                        i for i, (a, b) in enumerate(zip(data, expected, strict=False)) if a != b
                    )
                    out[name] = f"bytes differ from byte {bad} of {len(expected)}"
            except Exception as exc:
                out[name] = f"{type(exc).__name__}: {exc}"
    except Exception as exc:
        out["*"] = f"{type(exc).__name__}: {exc}"
    conn.send(out)
    conn.close()


class IpcChecks(GpuCheckBase):
    """get_ipc_handle, and the handle opened here and elsewhere."""

    def _check_ipc(self) -> None:
        from cuda.bindings import driver as cu

        mgr = self.mgr
        whole = mgr.memalloc(4096)
        big = mgr.memalloc(1 << 20)
        first, second = mgr.memalloc(4096), mgr.memalloc(4096)
        fills = {}
        for i, (mem, n) in enumerate(
            ((whole, 4096), (big, 1 << 20), (first, 4096), (second, 4096))
        ):
            fills[id(mem)] = pattern(n, 11 + i)
            self._write(mem, fills[id(mem)])
        piece = big.view(1000, 4000)
        cases = {
            "whole": (whole, fills[id(whole)]),
            "slice": (piece, fills[id(big)][1000:4000]),
            "suballoc-1": (first, fills[id(first)]),
            "suballoc-2": (second, fills[id(second)]),
        }
        identity = self.ctx.device.get_device_identity()
        problems: dict[str, list[str]] = {
            k: [] for k in ("type", "base", "handle", "size", "offset", "source")
        }
        blobs = []
        offsets = {}
        for name, (mem, data) in cases.items():
            handle = mgr.get_ipc_handle(mem)
            if not isinstance(handle, self.api.ipc_handle):
                problems["type"].append(f"{name}: {type(handle).__qualname__}")
                continue
            if handle.base is not mem and self._underlying(handle.base) is not self._underlying(
                mem
            ):
                problems["base"].append(f"{name}: base is {type(handle.base).__qualname__}")
            raw = getattr(handle.handle, "reserved", None)
            if not isinstance(handle.handle, cu.CUipcMemHandle) or len(bytes(raw or b"")) != 64:
                problems["handle"].append(f"{name}: {type(handle.handle).__qualname__}")
            if handle.size != mem.size:
                problems["size"].append(f"{name}: {handle.size} for memory.size {mem.size}")
            address = int(mem.device_pointer)
            base, _ = allocation_range(address)
            offsets[name] = handle.offset
            if handle.offset != address - base:
                problems["offset"].append(
                    f"{name}: {handle.offset}, pointer - base {address - base}"
                )
            if handle.source_info != identity:
                problems["source"].append(f"{name}: {handle.source_info}")
            try:
                blobs.append((name, pickle.dumps(handle), data.tobytes()))
            except Exception as exc:
                problems["handle"].append(f"{name}: does not pickle ({type(exc).__name__}: {exc})")
        self._emit_set(
            "ipc-handle-class", "EMM-IPCHANDLE-TYPE", problems["type"], "IpcHandle", list(cases)
        )
        self._emit_set(
            "ipc-handle-base",
            "EMM-IPCHANDLE-BASE",
            problems["base"],
            "the memory passed in",
            list(cases),
        )
        self._emit_set(
            "ipc-handle-bytes",
            "EMM-IPCHANDLE-HANDLE",
            problems["handle"],
            "a 64-byte CUipcMemHandle that pickles",
            list(cases),
        )
        self._emit_set(
            "ipc-handle-size", "EMM-IPCHANDLE-SIZE", problems["size"], "memory.size", list(cases)
        )
        self._emit_set(
            "ipc-handle-offset",
            "EMM-IPCHANDLE-OFFSET",
            problems["offset"],
            "pointer - driver allocation base",
            offsets,
        )
        self._emit_set(
            "ipc-handle-source",
            "EMM-IPCHANDLE-SOURCE-INFO",
            problems["source"],
            "the device's identity",
            list(cases),
        )
        self.emit(passed("ipc-handle", "EMM-IPC-HANDLE", f"returned for {list(cases)}"))
        self._check_ipc_same_process(mgr.get_ipc_handle(whole))
        if not blobs:
            return
        first_base, second_base = (
            allocation_range(int(m.device_pointer))[0] for m in (first, second)
        )
        shared = "one driver allocation" if first_base == second_base else "separate allocations"
        opened = self._open_in_child(blobs)
        for name, _, _ in blobs:
            verdict = opened.get(name, opened.get("*", "no answer"))
            rule = "EMM-IPC-OPEN-OTHER-PROCESS" if name == "whole" else "EMM-IPCHANDLE-OFFSET"
            label = f"ipc-open-{name}"
            if verdict == "ok":
                note = f"offset {offsets.get(name)}" + (
                    f", {shared}" if name.startswith("suballoc") else ""
                )
                self.emit(passed(label, rule, note))
            else:
                self.emit(failed(label, rule, verdict, "the exported bytes, in a spawned process"))
        del whole, big, first, second, piece, cases

    def _check_ipc_imported(self) -> None:
        """IPC of a CAI-imported array: the reference producer's array sits 512 bytes into its
        driver allocation; `cuda.as_cuda_array` wraps it and `get_ipc_handle` goes to the plugin
        (`lifecycle`), which did not allocate it. The handle must carry the offset from the
        driver allocation's base, so that opened in another process it shows the exported
        bytes [EMM-IPCHANDLE-OFFSET]; a plugin that refuses such memory leaves the user no way
        to share an imported array [EMM-IPC-HANDLE]."""
        from caiconform.reference.producer import ReferenceArray
        from caiconform.spec.layout import Layout

        check = "ipc-cai-import"
        values = pattern(4096, 13)
        exported = ReferenceArray(values, Layout((4096,), offset=512), "|u1", memory="device")
        imported = self.cuda.as_cuda_array(exported)
        address = int(exported.ptr)
        try:
            handle = imported.get_ipc_handle()._ipc_handle
        except Exception as exc:
            self.emit(
                failed(
                    check,
                    "EMM-IPC-HANDLE",
                    f"get_ipc_handle of as_cuda_array(obj) raised {type(exc).__name__}: {exc}",
                    "an IpcHandle for memory Numba imported through the CAI",
                )
            )
            return
        base, _ = allocation_range(address)
        if handle.offset != address - base:
            self.emit(
                failed(
                    check,
                    "EMM-IPCHANDLE-OFFSET",
                    f"offset {handle.offset}",
                    f"pointer - driver allocation base = {address - base}",
                )
            )
            return
        verdict = self._open_in_child([(check, pickle.dumps(handle), values.tobytes())])
        verdict = verdict.get(check, verdict.get("*", "no answer"))
        if verdict == "ok":
            self.emit(
                passed(check, "EMM-IPCHANDLE-OFFSET", f"offset {handle.offset}; opened elsewhere")
            )
        else:
            self.emit(
                failed(
                    check,
                    "EMM-IPCHANDLE-OFFSET",
                    verdict,
                    "the exported bytes, in a spawned process",
                )
            )
        del imported, exported

    def _check_ipc_same_process(self, handle: Any) -> None:
        try:
            handle.open(self.ctx)
        except Exception as exc:
            self.emit(
                passed(
                    "ipc-refuse-same-process",
                    "EMM-IPC-OPEN-OTHER-PROCESS",
                    f"{type(exc).__name__}: {exc}",
                )
            )
            return
        handle.close()
        self.emit(
            failed(
                "ipc-refuse-same-process",
                "EMM-IPC-OPEN-OTHER-PROCESS",
                "opened",
                "refused in the exporting process",
            )
        )

    def _open_in_child(self, blobs: list[tuple[str, bytes, bytes]]) -> dict[str, str]:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe(duplex=False)
        saved = os.environ.pop("NUMBA_CUDA_MEMORY_MANAGER", None)
        try:
            proc = ctx.Process(target=_importer_main, args=(blobs, child, self.api.implementation))
            proc.start()
        finally:
            if saved is not None:
                os.environ["NUMBA_CUDA_MEMORY_MANAGER"] = saved
        child.close()
        try:
            if not parent.poll(180):
                return {"*": "importer process sent nothing within 180 s"}
            return parent.recv()
        except EOFError:
            return {"*": f"importer process died (exit code {proc.exitcode})"}
        finally:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
