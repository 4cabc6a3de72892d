"""How much of a fresh machine's start is reading the libraries from disk (issue 11).

On a fresh H100 the zygote's imports of every library took 9.7 s and the probes 10.2 s, against
~6 s on a machine that had run the matrix before. This times the zygote's preload (every
adapter's library and the check modules, import-only) in a fresh process with the page cache
dropped, then again with the files it maps read into the cache first by threads, side by side
(the list of mapped files taken from the first import; and a list that needs no earlier run:
the shared objects under the libraries' packages), and once warm. Needs root to drop the page
cache (`/proc/sys/vm/drop_caches`); says so when it cannot.
Usage: python scripts/diag_cold_start.py > cold-start.txt
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
t = time.perf_counter()
from caiconform.runner import libraries
import caiconform.checks, pkgutil, importlib
for m in pkgutil.iter_modules(caiconform.checks.__path__):
    try:
        importlib.import_module("caiconform.checks." + m.name)
    except Exception:
        pass
for name in libraries.names():
    libraries.preload(name)
took = time.perf_counter() - t
maps = sorted({line.split(None, 5)[5].strip() for line in open("/proc/self/maps")
               if len(line.split(None, 5)) == 6 and line.split(None, 5)[5].startswith("/")})
print(json.dumps({"import_s": round(took, 3), "maps": maps}))
"""


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
        return True
    except OSError as exc:
        print(f"cannot drop the page cache: {exc}")
        return False


def preload() -> dict:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["wall_s"] = round(time.perf_counter() - started, 3)
    return data


def read_all(paths: list[str], threads: int = 16) -> tuple[float, int]:
    """Read `paths` into the page cache with `threads` threads: (seconds, bytes)."""
    from concurrent.futures import ThreadPoolExecutor

    def read(path: str) -> int:
        total = 0
        try:
            with open(path, "rb", buffering=0) as fh:
                while chunk := fh.read(8 << 20):
                    total += len(chunk)
        except OSError:
            pass
        return total

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        size = sum(pool.map(read, sorted(paths, key=lambda p: -_size(p))))
    return time.perf_counter() - started, size


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def package_objects() -> list[str]:
    """Shared objects under the packages the adapters import, and the `nvidia` wheels' libs:
    a list a fresh machine can make without an earlier run."""
    import importlib.util

    from caiconform.adapters import registry

    tops = {"nvidia", "numpy", "llvmlite", "jaxlib", "cupy_backends", "cuda"}
    for name in registry.names():
        tops.add(registry.get(name).module.split(".")[0])
    files = []
    for top in sorted(tops):
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        for root in list(spec.submodule_search_locations or []) if spec else []:
            for dirpath, _, names in os.walk(root):
                files += [os.path.join(dirpath, n) for n in names if ".so" in n]
    return files


def main() -> None:
    can_drop = drop_caches()
    cold = preload()
    maps = cold.pop("maps")
    mapped = sum(_size(p) for p in maps)
    print(
        f"cold: import {cold['import_s']} s, process {cold['wall_s']} s; maps {len(maps)} "
        f"files, {mapped / 1e9:.2f} GB"
    )
    warm = preload()
    warm.pop("maps")
    print(f"warm: import {warm['import_s']} s, process {warm['wall_s']} s")
    if not can_drop:
        return
    drop_caches()
    took, size = read_all(maps)
    print(f"read the mapped files: {took:.2f} s, {size / 1e9:.2f} GB (16 threads)")
    after = preload()
    after.pop("maps")
    print(f"then import: {after['import_s']} s, process {after['wall_s']} s")
    objects = package_objects()
    drop_caches()
    took, size = read_all(objects)
    print(
        f"read the packages' shared objects: {took:.2f} s, {size / 1e9:.2f} GB, "
        f"{len(objects)} files (16 threads)"
    )
    after = preload()
    after.pop("maps")
    print(f"then import: {after['import_s']} s, process {after['wall_s']} s")
    drop_caches()
    started = time.perf_counter()
    import threading

    reader = threading.Thread(target=read_all, args=(objects,))
    reader.start()
    side = preload()
    side.pop("maps")
    reader.join()
    print(
        f"both at once: import {side['import_s']} s, process {side['wall_s']} s, reading "
        f"ended {time.perf_counter() - started:.2f} s after the start"
    )


if __name__ == "__main__":
    main()
