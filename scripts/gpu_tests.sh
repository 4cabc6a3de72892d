#!/usr/bin/env bash
# The project's test command, as README's quick start gives it, on a GPU machine whose libraries
# are already installed: installs nothing new (caiconform itself, when no editable install of
# this checkout is there, with `pip install --no-deps --no-build-isolation -e .`, else this
# checkout on PYTHONPATH), then `python -m pytest -n auto -p no:cacheprovider` from the
# repository root, capped at CAP_S seconds (default 570; SIGINT, so pytest still reports).
# Writes OUT/tests.log (the whole output), OUT/junit.xml and OUT/summary.json: passed, failed,
# skipped and errors, the failing test ids, the slowest tests and files, wall seconds, pytest's
# exit status, the Python and
# numpy versions, the GPUs' names (nvidia-smi) and the cores. Exits with pytest's status.
#   bash scripts/gpu_tests.sh OUT [PYTEST_ARGS...]
set -uo pipefail
out=${1:?usage: gpu_tests.sh OUT [PYTEST_ARGS...]}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1

# caiconform from this checkout: its pytest11 plugin and adapter entry points need the metadata
here=$(python3 -c 'import os; print(os.path.realpath("caiconform"))')
# asked from / so that the checkout in the working directory does not answer for the install
installed=$(cd / && python3 -c 'import caiconform, os; print(os.path.dirname(os.path.realpath(caiconform.__file__)))' 2>/dev/null || true)
if [ "$installed" != "$here" ]; then
  python3 -m pip install -q --no-deps --no-build-isolation -e . > "$out/install.log" 2>&1 \
    || echo "gpu_tests: editable install failed (see install.log); using PYTHONPATH=." >&2
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

start=$(date +%s.%N)
timeout -s INT -k 15 "${CAP_S:-570}" python3 -m pytest -n auto -p no:cacheprovider \
  --junitxml="$out/junit.xml" "$@" > "$out/tests.log" 2>&1
rc=$?
wall=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")

gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || true)
RC=$rc WALL=$wall GPUS=$gpus OUT=$out python3 - <<'EOF'
import json
import os
import platform
import re
import xml.etree.ElementTree as ET
from pathlib import Path

out = Path(os.environ["OUT"])
log = (out / "tests.log").read_text(errors="replace") if (out / "tests.log").exists() else ""
counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
failing: list[str] = []
times: dict[str, float] = {}
source = "junit.xml"
try:
    root = ET.parse(out / "junit.xml").getroot()
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        times[name] = float(case.get("time") or 0.0)
        if case.find("error") is not None:
            counts["errors"] += 1
            failing.append(name)
        elif case.find("failure") is not None:
            counts["failed"] += 1
            failing.append(name)
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
except (OSError, ET.ParseError):  # no junit (pytest killed): its last summary line, if any
    source = "tests.log"
    lines = [ln for ln in log.splitlines() if re.search(r"\b(passed|failed|error)", ln)]
    last = lines[-1] if lines else ""
    for number, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", last):
        counts["errors" if word.startswith("error") else word] = int(number)
# the node ids as pytest's short summary (-ra, pyproject.toml addopts) names them
failing = re.findall(r"^(?:FAILED|ERROR) (\S+)", log, re.M) or failing
try:
    import numpy

    numpy_version = numpy.__version__
except ImportError:
    numpy_version = None
summary = {
    **counts,
    "failing": failing,
    "counted_from": source,
    "exit_status": int(os.environ["RC"]),
    "wall_s": float(os.environ["WALL"]),
    "python": platform.python_version(),
    "numpy": numpy_version,
    "gpus": [g.strip() for g in os.environ["GPUS"].splitlines() if g.strip()],
    "cores": os.cpu_count(),
    # where the workers' time went: the slowest tests and the test files by their summed time
    "test_seconds": round(sum(times.values()), 1),
    "slowest": [[n, round(t, 2)] for n, t in sorted(times.items(), key=lambda x: -x[1])[:40]],
    "by_file": [
        [f, round(t, 1)]
        for f, t in sorted(
            {
                f: sum(t for n, t in times.items() if n.rsplit("::", 1)[0] == f)
                for f in {n.rsplit("::", 1)[0] for n in times}
            }.items(),
            key=lambda x: -x[1],
        )[:30]
    ],
}
(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps({k: v for k, v in summary.items() if k not in ("failing", "slowest", "by_file")}))
for name in failing:
    print("failing:", name)
EOF
tail -3 "$out/tests.log"
exit "$rc"
