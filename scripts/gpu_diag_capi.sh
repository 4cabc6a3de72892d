#!/usr/bin/env bash
# One call: the dlpack_capi and dlpack_consumer families on the GPU machine's libraries, the
# non-pass records summarised by cell, outcome and rule with a message each (OUT/diag.txt).
#   bash scripts/gpu_diag_capi.sh OUT [SEED]
set -uo pipefail
out=${1:?usage: gpu_diag_capi.sh OUT [SEED]}
seed=${2:-2802562769}
mkdir -p "$out"; out=$(cd "$out" && pwd)
source scripts/gpu_env.sh
export CAICONFORM_START_CACHE=off
caiconform run --checks dlpack_capi,dlpack_consumer --seed "$seed" --out /tmp/diag > "$out/run.log" 2>&1
python3 - <<'PY' > "$out/diag.txt"
import gzip, json, collections, pathlib
p = pathlib.Path("/tmp/diag/results.jsonl")
rows = [json.loads(l) for l in (p.read_text() if p.exists() else gzip.open(str(p)+".gz","rt").read()).splitlines()]
seen = collections.OrderedDict()
for r in rows:
    if r.get("outcome") in ("pass", "skip"):
        continue
    key = (r.get("check"), r.get("producer"), r.get("consumer"), r.get("outcome"), r.get("rule"))
    seen.setdefault(key, [0, r.get("message"), r.get("params")])
    seen[key][0] += 1
for key, (n, msg, params) in seen.items():
    print(n, key, "\n   ", (msg or "")[:600], "\n   ", json.dumps(params)[:300])
PY
cat "$out/diag.txt" | head -80
