"""Plant recorded single-point mutants one at a time and say which the tests catch.

Each mutant is a change a developer could make (an operator, a bound, a branch, a default),
recorded in a TOML file as `[[mutant]]` tables:

    id = "capsule-lanes-zero"                   # unique
    file = "caiconform/dlpack/validate.py"      # relative to the repository root
    old = "lanes < 1"                           # occurs exactly once in the file
    new = "lanes < 0"
    tests = ["tests/test_dlpack.py"]            # the files that should catch it
    why = "lanes 0 accepted"                    # what the mutant breaks, in words

The tracked files are copied once to a temporary directory, and each mutant is planted there,
tested with `python -m pytest -x -q -n 0` over its `tests` (caught: a non-zero exit), and
removed; the checkout itself is never touched, so work can go on beside it. Prints one line
per mutant and the catch rate; exits 1 when the rate is under `--require` (default 0: report).

    python scripts/mutants.py tests/mutants/*.toml [--only ID ...] [--require 0.9] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def _load(paths: list[Path]) -> list[dict]:
    mutants, seen = [], set()
    for path in paths:
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SystemExit(f"mutants: {path}: {exc}") from None
        for entry in data.get("mutant", []):
            missing = {"id", "file", "old", "new", "tests"} - entry.keys()
            if missing:
                raise SystemExit(f"mutants: {path}: a mutant lacks {sorted(missing)}")
            if entry["id"] in seen:
                raise SystemExit(f"mutants: {path}: mutant id {entry['id']!r} twice")
            seen.add(entry["id"])
            mutants.append({**entry, "source": str(path)})
    return mutants


def _copy_tree(into: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        rel = name.decode()
        if rel.startswith("reports/"):
            continue  # published results: no mutant's tests read more than the tree's own
        src = ROOT / rel
        if not src.is_file():
            continue
        dst = into / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    if (ROOT / "reports").is_dir():  # tests that read the published run read it in place
        os.symlink(ROOT / "reports", into / "reports")


def _plant(tree: Path, mutant: dict, timeout: float) -> tuple[str, float, str]:
    path = tree / mutant["file"]
    original = path.read_text()
    count = original.count(mutant["old"])
    if count != 1:
        return f"not planted ({mutant['old']!r} occurs {count} times)", 0.0, ""
    path.write_text(original.replace(mutant["old"], mutant["new"]))
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    began = time.monotonic()
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-x",
                "-q",
                "-n",
                "0",
                "-p",
                "no:cacheprovider",
                *mutant["tests"],
            ],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        status = "survived" if done.returncode == 0 else "caught"
        if done.returncode in (4, 5):
            status = f"no verdict (pytest exit {done.returncode})"
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
    except subprocess.TimeoutExpired:
        status, tail = "caught (timeout)", ["timed out"]
    finally:
        path.write_text(original)
    return status, time.monotonic() - began, tail[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="TOML files of [[mutant]] tables")
    parser.add_argument("--only", nargs="*", default=None, help="run only these mutant ids")
    parser.add_argument("--require", type=float, default=0.0, help="least catch rate, 0..1")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    mutants = _load(args.files)
    if args.only is not None:
        unknown = set(args.only) - {m["id"] for m in mutants}
        if unknown:
            raise SystemExit(f"mutants: no mutant {sorted(unknown)}")
        mutants = [m for m in mutants if m["id"] in args.only]
    results = []
    with tempfile.TemporaryDirectory(prefix="caiconform-mutants-") as tmp:
        tree = Path(tmp)
        _copy_tree(tree)
        for mutant in mutants:
            status, seconds, tail = _plant(tree, mutant, args.timeout)
            results.append(
                {
                    "id": mutant["id"],
                    "file": mutant["file"],
                    "status": status,
                    "seconds": round(seconds, 1),
                    "why": mutant.get("why", ""),
                }
            )
            print(f"{status:>10}  {mutant['id']}  ({seconds:.1f} s)  {tail}", flush=True)
    planted = [r for r in results if r["status"].startswith(("caught", "survived"))]
    caught = [r for r in planted if r["status"].startswith("caught")]
    rate = len(caught) / len(planted) if planted else 0.0
    print(
        f"caught {len(caught)} of {len(planted)} planted mutants ({rate:.0%}); "
        f"{len(results) - len(planted)} not planted or without a verdict"
    )
    if args.json:
        args.json.write_text(json.dumps({"rate": rate, "results": results}, indent=1) + "\n")
    return 1 if rate < args.require or len(planted) < len(results) else 0


if __name__ == "__main__":
    sys.exit(main())
