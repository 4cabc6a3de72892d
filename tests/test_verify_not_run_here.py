"""`caiconform findings --verify` on a machine that cannot run a reproducer (issue 40, item 5):
a script whose library is missing here, or that needs a GPU this machine lacks, is `not run
here` (neither reproduced nor not), never replaces an earlier verification of its group, and
the command says NOT VERIFIED (exit 5) instead of an OK; the last BUG:/OK: line counts, and a
script printing none gave no verdict; findings.json agrees with verify.json afterwards.

The published run (reports/latest: its verify.json and findings.json, copied, never touched in
place) is verified again as a machine without the libraries would (`verify.missing_modules`
finds none of them, `verify.no_gpu` says there is no device), with the real script generator.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from caiconform.cli import main
from caiconform.report import upstream, verify
from caiconform.results import verification

LATEST = Path(__file__).resolve().parent.parent / "reports" / "latest"
NO_DEVICE = "no CUDA device: cuDeviceGetCount returned 0"
GROUP = {
    "library": "cupy",
    "role": "consumer",
    "rule": "CAI-CONSUMER-READS-DESCRIBED",
    "outcome": "fail",
    "severity": "corrupts",
    "count": 1,
    "reproducer": {"cell": "roundtrip/reference/cupy"},
}


@pytest.fixture
def gpu(monkeypatch):
    """A machine whose CUDA driver sees a device."""
    monkeypatch.setattr(verify, "no_gpu", lambda: None)


@pytest.fixture
def no_gpu(monkeypatch):
    """A machine whose CUDA driver sees no device."""
    monkeypatch.setattr(verify, "no_gpu", lambda: NO_DEVICE)


def test_the_last_line_counts_with_its_exit_status_and_no_line_is_no_verdict(gpu):
    last = verify.classify(1, "OK: the first read\nBUG: the second read differs\n", "")
    assert (last["standalone"], last["line"]) == ("reproduces", "BUG: the second read differs")
    undone = verify.classify(0, "BUG: the first read\nOK: the second read\n", "")
    assert (undone["standalone"], undone["line"]) == ("does not", "OK: the second read")
    for returncode, stdout, timed_out in [
        (0, "all done\n", False),  # exit 0 without an OK line is not "does not reproduce"
        (1, "setup\n", False),
        (1, "BUG: x\nOK: y\n", False),  # the last line, OK, disagrees with exit 1
        (None, "BUG: x\n", True),  # killed at the timeout after its line
        (-11, "BUG: x\n", False),
    ]:
        record = verify.classify(returncode, stdout, "", timed_out)
        assert record["standalone"] == "no verdict", (
            f"got {record['standalone']!r}, expected 'no verdict' [exit {returncode}, "
            f"stdout {stdout!r}, timed out {timed_out}]"
        )
    assert verify.classify(0, "", "")["detail"] == "exit status 0, printed no BUG/OK line"


def test_a_missing_library_is_not_run_here_not_a_refutation(gpu):
    missing = verify.classify(
        1, "", "Traceback (most recent call last):\nModuleNotFoundError: No module named 'cupy'\n"
    )
    assert (missing["standalone"], missing["result"], missing["detail"]) == (
        "not run here",
        "library missing",
        "not run here (library missing: cupy)",
    )
    # the generator's crash scripts exit with the child's standard error when it cannot start
    child = verify.classify(
        1,
        "",
        "the child did not reach the exchange: Traceback (most recent call last):\n"
        '  File "<string>", line 2, in <module>\n'
        "ModuleNotFoundError: No module named 'numba_cuda_mlir'\n",
    )
    assert child["detail"] == "not run here (library missing: numba_cuda_mlir)"
    broken = verify.classify(1, "", "ImportError: cannot import name 'asarray' from 'cupy'\n")
    assert broken["standalone"] == "not run here"
    assert "cannot import name 'asarray' from 'cupy'" in broken["detail"]
    # a verdict the script reached stands; a caiconform import stays the script's defect
    assert verify.classify(1, "BUG: x\n", "ImportError: y\n")["standalone"] == "reproduces"
    blocked = verify.classify(1, "", f"ModuleNotFoundError: {verify.BLOCKED}'caiconform'\n")
    assert blocked["result"] == "imports caiconform"
    # words of a missing driver count only where this machine's driver sees no device
    said = "RuntimeError: cuInit failed: no CUDA-capable device is detected\n"
    assert verify.classify(1, "", said)["standalone"] == "no verdict"


def test_no_gpu_here_is_not_run_here(no_gpu):
    driver = verify.classify(
        1, "", "Traceback\nRuntimeError: cuInit failed: no CUDA-capable device is detected\n"
    )
    assert (driver["standalone"], driver["result"], driver["detail"]) == (
        "not run here",
        "no GPU",
        "not run here (no GPU)",
    )
    assert NO_DEVICE in driver["evidence"] and "cuInit failed" in driver["evidence"]
    # a BUG line that only says the driver is missing reproduces nothing
    said = verify.classify(1, "BUG: cupy refused: CUDARuntimeError: cudaErrorNoDevice\n", "")
    assert said["standalone"] == "not run here"
    # on such a machine, a script that gave no verdict could not run here
    for returncode, timed_out in [(1, False), (-11, False), (None, True)]:
        assert verify.classify(returncode, "", "", timed_out)["standalone"] == "not run here"
    # a verdict that does not speak of the driver stands (a check that needs no device)
    ok = verify.classify(0, "OK: torch raised BufferError for a CPU export\n", "")
    assert ok["standalone"] == "does not"


def test_a_newer_verification_wins_and_not_run_here_never_does():
    bug = {"standalone": "reproduces", "at": "2026-11-26T12:00:00Z"}
    ok = {"standalone": "does not", "at": "2026-11-27T12:00:00Z"}
    not_run = {"standalone": "not run here", "at": "2026-11-28T12:00:00Z"}
    assert verify.newer_entry(bug, ok) is ok
    assert verify.newer_entry(ok, bug) is ok  # a stale entry does not replace a newer one
    assert verify.newer_entry(bug, not_run) is bug
    assert verify.newer_entry({"standalone": "reproduces"}, not_run) is not not_run
    assert verify.newer_entry({"standalone": "none"}, not_run)["standalone"] == "none"
    assert verify.newer_entry(None, not_run) is not_run
    again = {**not_run, "at": "2026-11-29T12:00:00Z"}
    assert verify.newer_entry(not_run, again) is again
    assert verify.newer_entry({"standalone": "reproduces"}, ok) is ok  # undated: older


def test_an_earlier_verification_and_its_script_survive_a_machine_that_cannot_run_it(
    tmp_path, gpu, monkeypatch
):
    bug = "print('BUG: cupy misread the values')\nraise SystemExit(1)\n"
    first = verify.verify_groups([GROUP], tmp_path, lambda g: bug, timeout_s=30)
    (key,) = first["groups"]
    earlier = first["groups"][key]
    assert earlier["standalone"] == "reproduces" and earlier["at"].endswith("Z")
    assert first["not_run_here"] == {}
    # the generator has moved on, and this machine lacks the library its script imports
    moved_on = "import verify_lib_not_here\nprint('BUG: x')\nraise SystemExit(1)\n"
    seen = []
    second = verify.verify_groups(
        [GROUP], tmp_path, lambda g: moved_on, progress=lambda *a: seen.append(a[3])
    )
    assert second["groups"][key] == earlier
    assert second["not_run_here"] == {key: "not run here (library missing: verify_lib_not_here)"}
    assert second["summary"]["reproduces"] == 1 and second["summary"]["not run here"] == 0
    assert seen[0]["standalone"] == "not run here" and seen[0]["kept"] == earlier
    assert (tmp_path / earlier["script"]).read_text() == bug
    assert not list(tmp_path.glob("standalone/.*")) and len(list(tmp_path.iterdir())) == 2
    # a later real verification replaces it, script and all
    ok = "print('OK: cupy read every value')\n"
    third = verify.verify_groups([GROUP], tmp_path, lambda g: ok, timeout_s=30)
    assert third["groups"][key]["standalone"] == "does not"
    assert third["groups"][key]["at"] >= earlier["at"]
    assert (tmp_path / earlier["script"]).read_text() == ok


@pytest.fixture
def published(tmp_path, monkeypatch):
    """A copy of reports/latest's verify.json, findings.json and env.json, with a one-record
    journal of the same run, whose catalogue is findings.json's (re-cataloguing the full
    journal would take seconds): a run directory as `caiconform findings` reads it."""
    if not (LATEST / "verify.json").exists():
        pytest.skip("reports/latest has no verify.json")
    run = tmp_path / "latest"
    run.mkdir()
    for name in ("verify.json", "findings.json", "env.json"):
        shutil.copy(LATEST / name, run / name)
    catalogue = json.loads((run / "findings.json").read_text())
    (run_id,) = catalogue["runs"]
    record = {
        "run_id": run_id,
        "seq": 1,
        "check": "roundtrip",
        "producer": "reference",
        "consumer": "cupy",
        "outcome": "pass",
        "rule": None,
        "params": {},
        "message": "",
        "repro": None,
        "shrunk": False,
    }
    (run / "results.jsonl").write_text(json.dumps(record) + "\n")
    (run / "cells.jsonl").write_text(json.dumps({"cell": "roundtrip/reference/cupy"}) + "\n")

    from caiconform.commands import _groups

    real = _groups.catalogue_groups

    def published_groups(run_dirs):
        run_data, _ = real(run_dirs)
        groups = json.loads((run / "findings.json").read_text())["groups"]
        for group in groups:
            group.pop("standalone", None)
        return run_data, groups

    monkeypatch.setattr(_groups, "catalogue_groups", published_groups)
    return run


def test_the_published_verification_survives_a_machine_without_the_libraries(
    published, no_gpu, monkeypatch, capsys
):
    """Before: every group "does not" reproduce, verify.json went from every published reproduction to 0,
    `OK: the matrix: no defect reproduces standalone`, exit 0, and --upstream marked them all
    UNCONFIRMED; findings.json said nothing of the verification."""
    before = json.loads((published / "verify.json").read_text())
    catalogue = json.loads((published / "findings.json").read_text())
    published_count = before["summary"]["reproduces"]
    assert published_count >= 20  # the published run's verification, made on a GPU
    monkeypatch.setattr(verify, "missing_modules", lambda names: set(names))
    assert main(["findings", str(published), "--verify"]) == 5
    printed = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("OK:") for line in printed)
    after = json.loads((published / "verify.json").read_text())
    for key, entry in before["groups"].items():
        if entry["standalone"] in ("reproduces", "does not") and key in after["not_run_here"]:
            assert after["groups"][key] == entry, f"{key}: its earlier verification was replaced"
    assert after["summary"]["reproduces"] == published_count
    assert after["summary"]["not run here"] == 0
    not_run = len(after["not_run_here"])
    assert not_run >= published_count and all(
        d.startswith("not run here (library missing: ") for d in after["not_run_here"].values()
    )
    verified = sum(line.startswith("[") for line in printed)
    assert printed[-1].startswith(
        f"NOT VERIFIED: the matrix: {not_run} of {verified} finding(s) could not run here "
        f"({not_run} library missing); verify.json keeps the earlier verification of {not_run} "
        "of them ("
    )
    assert printed[-2].startswith(
        f"FIX: the matrix: {published_count} defect(s) reproduce standalone"
    )
    assert f", {not_run} not run here; " in printed[-3]
    # findings.json now says of each group what verify.json says; nothing else changed
    written = json.loads((published / "findings.json").read_text())
    for group in written["groups"]:
        entry = after["groups"].get(verify.standalone_key(group))
        said = (group["standalone"] or {}).get("standalone", "not verified")
        expected = "not verified" if entry is None else entry["standalone"]
        assert said == expected, f"findings.json says {said!r}, verify.json {expected!r}"
        group.pop("standalone")
    for group in catalogue["groups"]:
        group.pop("standalone", None)  # a published findings.json may carry it already
    assert written == catalogue
    assert main(["findings", str(published), "--list"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert sum(row[7] == "reproduces" for row in rows) == published_count
    # the upstream pack keeps to the earlier, real verification
    fileable = {verify.standalone_key(g) for g in catalogue["groups"] if upstream.fileable(g)}
    reproduce = sum(
        e["standalone"] == "reproduces" for k, e in after["groups"].items() if k in fileable
    )
    assert main(["findings", str(published), "--upstream", str(published / "pack")]) == 0
    said = capsys.readouterr().out
    counts = [int(n) for n in re.findall(r"(\d+) reproduce standalone", said)]
    assert reproduce == published_count and sum(counts) == reproduce, said


def test_a_real_script_on_a_machine_without_a_gpu_is_not_run_here(published):
    """A published reproducer run here for real: without its library or a GPU it is not run
    here, and the earlier BUG stands."""
    from caiconform.cuda import gpu_available
    from caiconform.report.standalone import script_for_group

    if gpu_available()[0]:
        pytest.skip("this machine has a GPU: the script runs for real")
    catalogue = json.loads((published / "findings.json").read_text())
    before = json.loads((published / "verify.json").read_text())["groups"]
    # the published cuda.core group when there is one (cuda.core is installed here: its script
    # really starts), else the first group the GPU verification reproduced
    keys = [k for k, e in before.items() if e.get("standalone") == "reproduces"]
    key = next((k for k in keys if k.startswith("cuda.core-")), keys[0])
    (group,) = [g for g in catalogue["groups"] if verify.standalone_key(g) == key]
    after = verify.verify_groups([group], published, script_for_group, timeout_s=60)
    said = after["not_run_here"][key]
    assert said == "not run here (no GPU)" or said.startswith("not run here (library missing: ")
    assert after["groups"][key] == before[key]


def test_annotate_shows_a_group_not_run_here_as_not_verified():
    """Every report reads a group whose only entry is `not run here` as not verified (its
    `standalone` is None), and says why."""
    group = dict(GROUP)
    entry = {"standalone": "not run here", "detail": "not run here (no GPU)"}
    verify.annotate([group], {"groups": {verify.standalone_key(group): entry}})
    assert group["standalone"] is None and group["standalone_not_run"]["detail"] == entry["detail"]
    assert verify.status_line(group) == "not verified: not run here (no GPU)"
    assert verification.lead_rank(group) == 1
    verify.annotate([group], {"groups": {}})
    assert "standalone_not_run" not in group and verify.status_line(group) is None
