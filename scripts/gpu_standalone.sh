#!/usr/bin/env bash
# Run the standalone reproducers in DIR (written here by
# `python -m caiconform.report.standalone FINDINGS.json DIR`) on a GPU machine: each script in a
# fresh interpreter, in an empty directory, with `import caiconform` blocked, JOBS at a time,
# TIMEOUT seconds each. The carried wheels (.whl: cuda.cccl, RMM, PyCUDA) are installed under
# /tmp/site first; caiconform is not installed. Writes to $OUT: results.tsv (script, verdict,
# exit status, seconds, its BUG/OK line), summary.txt (reproduced per family and overall) and
# logs.txt (each script's output tail).
#   usage: scripts/gpu_standalone.sh [DIR] [JOBS] [TIMEOUT]
set -u
dir=${1:-.standalone_try}
jobs=${2:-8}
timeout=${3:-90}
out=${OUT:-/tmp/standalone-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || echo "wheel install failed"
  export PYTHONPATH=/tmp/site
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/summary.txt"
python3 - "$dir" "$jobs" "$timeout" "$out" <<'PY'
import os, signal, subprocess, sys, tempfile, time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

folder, jobs, limit, out = Path(sys.argv[1]).resolve(), int(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
BOOT = """
import runpy, sys
class NoCaiconform:
    def find_spec(self, name, path=None, target=None):
        if name == "caiconform" or name.startswith("caiconform."):
            raise ModuleNotFoundError("caiconform is blocked: " + name, name=name)
sys.meta_path.insert(0, NoCaiconform())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

def run(script):
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as cwd:
        try:
            p = subprocess.run([sys.executable, "-u", "-c", BOOT, str(script)], cwd=cwd,
                               capture_output=True, text=True, timeout=limit)
            rc, text = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as exc:
            rc, text = "timeout", (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    lines = [l.strip() for l in text.splitlines() if l.strip().startswith(("BUG:", "OK:"))]
    line = lines[-1] if lines else ""
    if rc == 1 and line.startswith("BUG:"):
        verdict = "reproduces"
    elif rc == 0 and line.startswith("OK:"):
        verdict = "ok"
    elif isinstance(rc, int) and rc < 0:
        verdict = f"signal {signal.Signals(-rc).name}"
    else:
        verdict = f"error {rc}"
    return script.name, verdict, rc, round(time.monotonic() - start, 1), line, text

rows = [row.split("\t") for row in (folder / "manifest.tsv").read_text().splitlines()[1:]]
manifest = {f[7]: f for f in rows if not f[7].startswith("none")}
none = [f for f in rows if f[7].startswith("none")]
scripts = sorted(folder.glob("*.py"))
with ThreadPoolExecutor(jobs) as pool:
    results = list(pool.map(run, scripts))
by_family, total = Counter(), Counter()
with open(out / "results.tsv", "w") as tsv, open(out / "logs.txt", "w") as logs:
    tsv.write("script\tverdict\texit\tseconds\tline\n")
    for name, verdict, rc, secs, line, text in results:
        tsv.write(f"{name}\t{verdict}\t{rc}\t{secs}\t{line}\n")
        logs.write(f"===== {name}: {verdict} ({secs} s)\n{text[-3000:]}\n")
        fam = manifest.get(name, ["", "?"])[1]
        by_family[(fam, verdict == "reproduces")] += 1
        total[verdict == "reproduces"] += 1
with open(out / "summary.txt", "a") as s:
    for fam in sorted({f for f, _ in by_family}):
        yes, all_ = by_family[(fam, True)], by_family[(fam, True)] + by_family[(fam, False)]
        s.write(f"{fam}: {yes}/{all_} reproduce\n")
    groups = len(rows)
    s.write(f"all: {total[True]}/{groups} groups reproduce ({len(none)} without a script)\n")
    s.write("verdicts: " + ", ".join(f"{k} {v}" for k, v in Counter(r[1] for r in results).items()) + "\n")
print(open(out / "summary.txt").read())
PY
