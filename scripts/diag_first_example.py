"""Where a library's first example in a new worker child goes, and what importing the modules
that example imports in the fork server first would save (issue 43: a run's ~220 new children
spend ~120 s of slot time in their first examples).

For each library (default: every consumer adapter of the default run), in a process of its
own that is a fork server's stand-in (every check module and `libraries.preload(NAME)`
imported: import-only, no CUDA, as a run's fork server preloads), a forked child that prepares
as a run's child does (`libraries.warm` of reference and NAME), runs two roundtrip examples
reference -> NAME (float32, C layout) and reports each step's seconds and the modules the
steps imported. The host then imports those modules itself (those whose import fails, or that
name a context-making module, are left out) and forks a second child that does the same. Prints one JSON object per library.
Run on a GPU machine with the checkout on PYTHONPATH:
    python scripts/diag_first_example.py [NAME ...] > first-example.jsonl
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time

DEFAULT = (
    "cupy",
    "torch",
    "jax",
    "numba",
    "numba-from-cai",
    "numba-kernel",
    "numba-mlir",
    "numba-mlir-kernel",
    "cuda.core",
    "cuda.cccl",
    "pycuda",
    "rmm",
)
#: module names whose import makes a CUDA context (never imported by the host)
_CONTEXT = ("autoinit", "autoprimaryctx")


def _child(name: str, write: int) -> None:
    from caiconform.checks import roundtrip
    from caiconform.runner import libraries
    from caiconform.spec.layout import Layout

    before = set(sys.modules)
    steps: dict[str, float] = {}
    began = time.perf_counter()
    libraries.warm("reference")
    steps["warm reference"] = time.perf_counter() - began
    began = time.perf_counter()
    libraries.warm(name)
    steps[f"warm {name}"] = time.perf_counter() - began
    params = {"typestr": "<f4", "layout": Layout((3, 4)).to_dict(), "seed": 0}
    outcomes = []
    for step in ("first example", "second example"):
        began = time.perf_counter()
        result = roundtrip.execute(params, "reference", name)
        steps[step] = time.perf_counter() - began
        outcomes.append(result.outcome)
    new = sorted(set(sys.modules) - before)
    os.write(write, json.dumps({"s": steps, "outcomes": outcomes, "modules": new}).encode())
    os._exit(0)


def _forked(name: str) -> dict:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            _child(name, write)
        except BaseException:  # noqa: BLE001 - the child's traceback is the diagnosis
            import traceback

            traceback.print_exc()
        finally:
            os._exit(1)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 20):
        data += chunk
    _, status = os.waitpid(pid, 0)
    return json.loads(data) if data else {"error": f"child ended with status {status}"}


def one(name: str) -> dict:
    from caiconform.checks import load
    from caiconform.runner import libraries
    from caiconform.spec.families import FAMILIES

    for family in FAMILIES:  # every check module, as a run's fork server preloads them
        load(family)
    began = time.perf_counter()
    libraries.preload(name)
    preload_s = time.perf_counter() - began
    cold = _forked(name)
    imported, failed = [], 0
    began = time.perf_counter()
    for module in cold.get("modules", []):
        if module.rsplit(".", 1)[-1] in _CONTEXT or module in sys.modules:
            continue
        try:
            importlib.import_module(module)
            imported.append(module)
        except Exception:  # noqa: BLE001 - left to the child, as now
            failed += 1
    host_s = time.perf_counter() - began
    warm = _forked(name)
    return {
        "library": name,
        "preload_s": round(preload_s, 3),
        "cold": {k: round(v, 3) for k, v in cold.get("s", {}).items()},
        "cold_outcomes": cold.get("outcomes"),
        "cold_new_modules": len(cold.get("modules", [])),
        "host_imported": len(imported),
        "host_failed": failed,
        "host_import_s": round(host_s, 3),
        "after": {k: round(v, 3) for k, v in warm.get("s", {}).items()},
        "after_outcomes": warm.get("outcomes"),
        "after_new_modules": len(warm.get("modules", [])),
        "top_packages": sorted({m.split(".")[0] for m in cold.get("modules", [])}, key=str.lower)[
            :30
        ],
        "error": cold.get("error") or warm.get("error"),
    }


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(one(sys.argv[2])))
        return
    for name in sys.argv[1:] or DEFAULT:
        out = subprocess.run(
            [sys.executable, __file__, "--one", name], capture_output=True, text=True, timeout=300
        )
        line = (out.stdout.strip().splitlines() or [""])[-1]
        if line.startswith("{") and json.loads(line).get("error"):
            line = json.dumps({**json.loads(line), "stderr": out.stderr[-600:]})
        print(
            line
            if line.startswith("{")
            else json.dumps({"library": name, "error": out.stderr[-400:]})
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
