"""Acceptance of the plugin's verdicts on a GPU, as a maintainer meets them (issue 24, item 7).

`cleanlib` is a clean pass-through to CuPy; `cleanlib_planted` is the same library after a bad
change (views export their allocation's base pointer); `cleanlib_shape0` after another (its
consumer reads `shape[0]`: an IndexError on every 0-d array). All run under `--cai-name
cleanlib` against reference, cupy, torch and numba: a baseline written from the first run keeps
the next three runs green; the planted run is red with the planted defect as its only failing
defect and its first line; other libraries' defects appear only in their own list. The shape[0]
run is red although the baseline holds an entry for the same library, role, rule and outcome:
the entry pins its failure mode (docs/expectations.md), and IndexError is not it.

Each run's output goes to `$CAI_DOWNSTREAM_LOG` (a directory) when set, for the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from caiconform.cuda import gpu_available

ROOT = Path(__file__).resolve().parents[2]
PEERS = "reference,cupy,torch,numba"
pytestmark = pytest.mark.gpu


def _plugin(tmp: Path, module: str, *extra: str, log: str) -> tuple[int, list[str]]:
    """Run the plugin on `module` in a fresh pytest process; (exit code, its caiconform
    summary lines)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    command = [
        sys.executable, "-m", "pytest", "-m", "cai", "-p", "no:cacheprovider", "-q",
        "--cai-name", "cleanlib", "--cai-against", PEERS,
        "--cai-producer", f"tests.downstream.{module}.testing:make_array",
        "--cai-consumer", f"tests.downstream.{module}.testing:to_host",
        *extra,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=400)
    out = done.stdout + done.stderr
    logs = os.environ.get("CAI_DOWNSTREAM_LOG")
    if logs:
        Path(logs).mkdir(parents=True, exist_ok=True)
        (Path(logs) / f"{log}.log").write_text(out)
    lines = out.splitlines()
    marks = [i for i, line in enumerate(lines) if line.startswith("=") and " caiconform " in line]
    assert marks, f"no caiconform summary in the output:\n{out[-3000:]}"
    return done.returncode, lines[marks[0] + 1 :]


@pytest.fixture(scope="session")
def clean_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The baseline the plugin writes from a run of the clean library: one run for the whole
    pytest run, whichever xdist worker asks first (the others wait for it)."""
    from tests.conftest import _built_once

    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"needs a GPU: {why}")

    def write(baseline: Path) -> None:
        tmp = baseline.parent / "clean-run"
        tmp.mkdir(exist_ok=True)
        _, first = _plugin(tmp, "cleanlib", "--cai-write-baseline", str(baseline), log="1-first")
        assert baseline.is_file(), first[:5]

    return _built_once(tmp_path_factory, "cai-expectations.yaml", write)


@pytest.mark.parametrize("run", [2, 3, 4])
def test_a_baseline_keeps_the_pass_through_green(tmp_path, clean_baseline, run):
    """Each of three runs of the clean library after the one that wrote the baseline is green
    (separate tests: xdist runs them side by side, as three CI jobs would)."""
    code, summary = _plugin(
        tmp_path, "cleanlib", "--cai-expectations", str(clean_baseline), log=f"{run}-baselined"
    )
    assert code == 0, "\n".join(summary[:20])
    assert summary[0].startswith("OK: cleanlib: no failing defect; 0 new since baseline")


def test_the_planted_bug_is_red_and_alone(tmp_path, clean_baseline):
    baseline = clean_baseline
    code, planted = _plugin(
        tmp_path, "cleanlib_planted", "--cai-expectations", str(baseline), log="5-planted"
    )
    assert code == 1
    # the planted bug, seen as what it does: a sliced view's dict describes other elements
    # [CAI-PRODUCER-DESCRIBES-DATA]; a negative-stride view's reaches outside its allocation
    # [CAI-DATA-EXTENT-IN-ALLOCATION]. Nothing else fails.
    planted_rules = {"CAI-PRODUCER-DESCRIBES-DATA", "CAI-DATA-EXTENT-IN-ALLOCATION"}
    assert planted[0].startswith("FIX: cleanlib: "), planted[0]
    assert "(corrupts: cleanlib producer CAI-" in planted[0], planted[0]
    at = next(
        i for i, line in enumerate(planted) if line.startswith("defects of cleanlib, failing:")
    )
    count = int(planted[at].rsplit(":", 1)[1])
    failing = planted[at + 1 : at + 1 + count]
    # a sliced view misread is a wrong value (corrupts); a dict reaching past the allocation is
    # an export a conforming consumer cannot use, no value misread (refuses-valid)
    assert all(
        line.startswith("  corrupts: cleanlib producer CAI-PRODUCER-DESCRIBES-DATA")
        or line.startswith("  refuses-valid: cleanlib producer CAI-DATA-EXTENT-IN-ALLOCATION")
        for line in failing
    ), failing
    assert {line.split()[3] for line in failing} <= planted_rules, failing
    assert any("CAI-PRODUCER-DESCRIBES-DATA" in line for line in failing), failing
    others = [line for line in planted if line.startswith("seen in other libraries")]
    assert others, "the peers' defects are listed on their own"


def test_a_new_failure_mode_under_a_baselined_rule_is_red(tmp_path, clean_baseline):
    """The consumer that reads shape[0] fails a group of cleanlib's that the baseline holds an
    entry for (same consumer, rule and outcome, another failure mode): red, not hidden."""
    report = tmp_path / "report"
    code, summary = _plugin(
        tmp_path,
        "cleanlib_shape0",
        *("--cai-expectations", str(clean_baseline), "--cai-report", str(report)),
        log="6-shape0",
    )
    assert code == 1, "\n".join(summary[:20])
    assert summary[0].startswith("FIX: cleanlib: "), summary[0]
    matrix = json.loads((report / "matrix.json").read_text())
    groups = matrix["catalogue"]["groups"]
    new = [
        g
        for g, status in zip(groups, matrix["verdict"]["status"], strict=True)
        if status == "new" and g["library"] == "cleanlib"
    ]
    assert new and {g["role"] for g in new} == {"consumer"}, new
    entries = yaml.safe_load(clean_baseline.read_text())["expectations"]
    baselined = {(e["rule"], e["outcome"]): e for e in entries if e.get("consumer") == "cleanlib"}
    outcome = {"rejected-valid": "rejected"}
    hidden = [g for g in new if (g["rule"], outcome.get(g["outcome"], g["outcome"])) in baselined]
    assert hidden, (
        "the clean baseline holds no entry of cleanlib's consumer under the rule and outcome "
        f"of a new group ({[(g['rule'], g['outcome']) for g in new]}; baselined: "
        f"{sorted(baselined)}): the shape[0] mode is a new group here, not a hidden one"
    )
    records = [
        json.loads(line)
        for journal in report.rglob("results.jsonl")
        for line in journal.read_text().splitlines()
    ]
    modes = {
        str(r.get("seen")).split(":")[0]
        for r in records
        if r.get("consumer") == "cleanlib"
        and r.get("rule") in {g["rule"] for g in hidden}
        and r.get("outcome") != "pass"
    }
    assert "IndexError" in modes, modes
