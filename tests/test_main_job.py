"""The README's main job, `caiconform run`, on whatever machine runs the tests.

Without a GPU it must still run what needs none (the schema family over the `synthetic`
pseudo-producer) and say plainly which cells it skipped and why.
"""

from __future__ import annotations

import json
import subprocess
import sys

from caiconform.cuda.device import gpu_available


def test_main_job_runs_what_needs_no_gpu_and_names_what_it_skipped(tmp_path):
    out = tmp_path / "run"
    args = ["run", "--libraries", "synthetic,reference", "--checks", "schema,roundtrip"]
    args += ["--max-examples", "5", "--out", str(out)]
    run = subprocess.run(
        [sys.executable, "-m", "caiconform.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    synthetic = [r for r in records if r["producer"] == "synthetic"]
    assert synthetic, "the schema family must judge the synthetic dicts on any machine"
    assert {r["check"] for r in synthetic} == {"schema"}, "synthetic pairs with no other family"
    assert all(r["outcome"] == "pass" for r in synthetic), [r["message"] for r in synthetic]
    has_gpu, why = gpu_available()
    if not has_gpu:
        assert "Skipped" in run.stdout
        assert "reference unavailable" in run.stdout
        assert "no NVIDIA driver" in run.stdout or why.split(":")[0] in run.stdout
