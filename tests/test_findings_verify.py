"""`caiconform findings --verify` and `--upstream`: standalone reproducers run in a fresh process
without caiconform, their verdicts recorded and shown, and the upstream pack.

The run directories are synthetic (one corrupting group per library) and the generator of
standalone scripts is replaced by one that returns a fake script per library: one that prints
BUG and exits 1, one that prints OK, one that hangs (with a child process that hangs too), one
that kills itself with SIGSEGV, one that imports caiconform at run time past the static check,
one that imports it plainly, one that imports a library not installed, none, and a generator
that raises. The machine is taken to have a GPU (`verify.no_gpu`), so a script that gives no
verdict is `no verdict` here too (tests/test_verify_not_run_here.py: a machine without one).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import signal
import sys
import time
import types
from pathlib import Path

import pytest

from caiconform.cli import main
from caiconform.report import upstream, verify
from caiconform.results.record import cell_key
from caiconform.results.severity import HARM
from caiconform.spec.rules import RULES

RULE = "CAI-CONSUMER-READS-DESCRIBED"
HANG = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "time.sleep(60)\n"
)
#: library -> the standalone script the fake generator writes for its group
SCRIPTS = {
    "cupy": "import json\nprint('BUG: cupy wrote through a read-only view')\nraise SystemExit(1)\n",
    "torch": "import json\nprint('OK: torch read every value')\n",
    "jax": HANG,
    "numba": "import os\nprint('starting')\nos.kill(os.getpid(), 11)\n",
    "pycuda": "import importlib\nimportlib.import_module('caicon' + 'form.spec')\nprint('OK: x')\n",
    "rmm": "from caiconform.spec.rules import RULES\nprint('BUG: x')\nraise SystemExit(1)\n",
    "warp": None,
    "cuda.core": "import numpy\nimport a_library_not_installed_here\nprint('BUG: x')\n",
    "mpi4py": "import verify_fake_lib\nprint('BUG: ' + verify_fake_lib.SAID)\nraise SystemExit(1)\n",
    "cuda.cccl": "import subprocess, sys\nCHILD = '''import numpy\nimport caiconform\n'''\n"
    "subprocess.run([sys.executable, '-c', CHILD])\nprint('BUG: x')\nraise SystemExit(1)\n",
}


def _record(seq: int, consumer: str, **extra) -> dict:
    return {
        "run_id": "r1",
        "seq": seq,
        "check": "roundtrip",
        "producer": "reference",
        "consumer": consumer,
        "outcome": extra.pop("outcome", "fail"),
        "rule": extra.pop("rule", RULE),
        "params": {"n": seq},
        "message": extra.pop("message", f"{consumer} misread the values [{RULE}]"),
        "expected": "x",
        "repro": None,
        "shrunk": False,
        **extra,
    }


def _run_dir(tmp_path: Path, libraries=(*SCRIPTS, "dali")) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    records = [_record(n, lib) for n, lib in enumerate(libraries, start=1)]
    _write_journal(run, records)
    env = {
        "python": {"version": "3.12.3"},
        "gpu": {"devices": [{"name": "NVIDIA GPU"}], "driver_version": "580.159.04"},
        "libraries": {"caiconform": "0.1.0", "cupy-cuda13x": "14.2.0", "numpy": "2.5.2"},
    }
    (run / "env.json").write_text(json.dumps(env))
    return run


def _write_journal(run: Path, records: list[dict]) -> None:
    """results.jsonl of `records`, and cells.jsonl saying each of their cells finished."""
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cells = dict.fromkeys(cell_key(r) for r in records)
    (run / "cells.jsonl").write_text("".join(json.dumps({"cell": c}) + "\n" for c in cells))


def _generate(group: dict) -> str | None:
    if group.get("library") == "dali":
        raise RuntimeError("no template for this family")
    return SCRIPTS.get(group.get("library"))


@pytest.fixture
def generator(monkeypatch):
    """The standalone generator replaced by `_generate`, on a machine taken to have a GPU."""
    fake = types.ModuleType("caiconform.report.standalone")
    fake.script_for_group = _generate
    monkeypatch.setitem(sys.modules, "caiconform.report.standalone", fake)
    monkeypatch.setattr(verify, "no_gpu", lambda: None)


@pytest.fixture(autouse=True, scope="module")
def _no_triage():
    """The synthetic run's groups share identities with published findings (torch consumer
    CAI-CONSUMER-READS-DESCRIBED): the package's triage would add its upstream reports to
    them. These tests judge the verification alone."""
    from caiconform.report import triage

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(triage, "triage_entries", lambda: {})
        yield


@pytest.fixture(scope="module")
def verified_once(tmp_path_factory, _no_triage):
    """A run verified once for the module (timeout 4 s, all scripts at once: a loaded
    two-core CI machine starts eleven interpreters slowly): its directory,
    what --verify printed and how long it took."""
    run = _run_dir(tmp_path_factory.mktemp("verified"))
    # a library installed with `pip --target` into a PYTHONPATH directory, which python -I
    # ignores: the verification puts it back
    site = tmp_path_factory.mktemp("site")
    (site / "verify_fake_lib.py").write_text("SAID = 'the library on PYTHONPATH was found'\n")
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(printed):
        fake = types.ModuleType("caiconform.report.standalone")
        fake.script_for_group = _generate
        mp.setitem(sys.modules, "caiconform.report.standalone", fake)
        mp.setattr(verify, "no_gpu", lambda: None)
        mp.setenv("PYTHONPATH", str(site))
        start = time.monotonic()
        code = main(["findings", str(run), "--verify", "--timeout", "4", "--jobs", "11"])
        elapsed = time.monotonic() - start
    assert code == 5  # one script could not run here (a library missing): NOT VERIFIED
    return run, printed.getvalue(), elapsed


@pytest.fixture
def verified(verified_once, tmp_path, generator):
    """A copy of the verified run (a test may verify it again or write beside it)."""
    run, printed, elapsed = verified_once
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    return copy, printed, elapsed


def test_verify_records_each_script_by_what_it_did(verified):
    run, printed, elapsed = verified
    data = json.loads((run / "verify.json").read_text())
    assert data["schema"] == verify.SCHEMA
    entries = {e["library"]: e for e in data["groups"].values()}
    assert set(entries) == {*SCRIPTS, "dali"}
    cupy = entries["cupy"]
    assert (cupy["standalone"], cupy["result"], cupy["exit"]) == ("reproduces", "bug", 1)
    assert cupy["line"] == "BUG: cupy wrote through a read-only view"
    assert (entries["torch"]["standalone"], entries["torch"]["line"]) == (
        "does not",
        "OK: torch read every value",
    )
    assert (entries["jax"]["standalone"], entries["jax"]["result"]) == ("no verdict", "timeout")
    # killed with its child at the timeout: the child's open pipes do not hold it up
    assert 4 <= entries["jax"]["seconds"] < 8
    numba = entries["numba"]
    assert (numba["standalone"], numba["result"], numba["signal"]) == (
        "no verdict",
        "signal",
        signal.Signals.SIGSEGV.name,
    )
    assert "printed no BUG/OK line" in numba["detail"]
    # caiconform is installed here, yet the bootstrap keeps it out of the script's process
    assert entries["pycuda"]["result"] == "imports caiconform"
    assert entries["pycuda"]["standalone"] == "none"
    # a plain import is found before anything runs
    assert (entries["rmm"]["result"], entries["rmm"]["seconds"]) == ("imports caiconform", 0.0)
    assert "imports caiconform.spec.rules: not run" in entries["rmm"]["detail"]
    assert entries["cuda.cccl"]["result"] == "imports caiconform"
    assert entries["mpi4py"]["line"] == "BUG: the library on PYTHONPATH was found"
    assert (entries["cuda.core"]["standalone"], entries["cuda.core"]["result"]) == (
        "not run here",
        "library missing",
    )
    assert entries["cuda.core"]["detail"] == (
        "not run here (library missing: a_library_not_installed_here)"
    )
    assert (entries["warp"]["standalone"], entries["warp"]["script"]) == ("none", None)
    assert entries["dali"]["result"] == "generator error"
    assert "RuntimeError: no template" in entries["dali"]["detail"]
    assert data["summary"]["reproduces"] == 2 and data["summary"]["does not"] == 1
    assert data["summary"]["no verdict"] == 2 and data["summary"]["not run here"] == 1
    assert data["summary"]["none"] == 5 and data["verified"] == 11
    assert list(data["not_run_here"]) == [
        verify.standalone_key({**entries["cuda.core"], "outcome": "fail"})
    ]
    # each script is kept next to the run under its group's stable name
    assert (
        cupy["script"]
        == f"standalone/{verify.standalone_key({'library': 'cupy', 'role': 'consumer', 'rule': RULE, 'outcome': 'fail'})}.py"
    )
    assert (run / cupy["script"]).read_text() == SCRIPTS["cupy"]
    # a hang (and its child) is killed at the timeout and never holds up the rest
    assert elapsed < 14 and data["seconds"] < 14
    lines = printed.splitlines()
    assert sum(line.startswith("[") for line in lines) == 11
    assert any(
        line.startswith("[") and "reproduces: corrupts: cupy consumer" in line for line in lines
    )
    assert "verified 11 finding(s) in" in printed
    assert (
        "2 reproduce, 1 do not, 2 gave no verdict, 5 have no standalone reproducer, "
        "1 not run here;" in printed
    )
    assert lines[-2].startswith(
        f"FIX: the matrix: 2 defect(s) reproduce standalone (corrupts: cupy consumer {RULE} "
    )
    assert lines[-2].endswith("; 8 unconfirmed (no standalone reproduction); 1 not verified")
    assert lines[-1] == (
        "NOT VERIFIED: the matrix: 1 of 11 finding(s) could not run here (1 library missing); "
        "verify.json has no earlier verification of them; run `caiconform findings RUN "
        "--verify` where their libraries and a GPU are"
    )


def test_issue_texts_lead_with_what_reproduces_and_mark_the_rest_unconfirmed(verified, capsys):
    run, _, _ = verified
    assert main(["findings", str(run), "--list"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert rows[0][1] == "cupy" and rows[0][7] == "reproduces"
    assert {r[1]: r[7] for r in rows}["torch"] == "does not"
    assert main(["findings", str(run)]) == 0
    texts = capsys.readouterr().out.split("\n---\n\n")
    assert texts[0].startswith(f"## cupy (consumer) breaks {RULE}")
    assert (
        "**Standalone**: reproduces standalone in a fresh process without caiconform (BUG: "
        in (texts[0])
    )
    assert "```python\n" + SCRIPTS["cupy"].rstrip() + "\n```" in texts[0]
    assert "`standalone/cupy-consumer-" in texts[0] and "the script that was run" in texts[0]
    torch = next(t for t in texts if t.startswith("## torch"))
    assert "**Standalone**: UNCONFIRMED: the standalone script does not reproduce it (OK: " in (
        torch
    )
    missing = next(t for t in texts if t.startswith("## cuda.core"))
    assert (
        "**Standalone**: not verified: not run here (library missing: "
        "a_library_not_installed_here)." in missing
    )
    assert "generated from the finding, not yet run" in missing
    warp = next(t for t in texts if t.startswith("## warp"))
    assert "**Standalone**: UNCONFIRMED: no standalone reproducer (no script written)" in warp
    out = run / "issues"
    assert main(["findings", str(run), "--out", str(out)]) == 0
    index = (out / "index.md").read_text().splitlines()
    assert index[2].startswith("- corrupts: [cupy") and index[2].endswith("reproduces standalone")
    assert sum(line.endswith("— UNCONFIRMED") for line in index) == 8
    assert sum(line.endswith("— not verified (not run here)") for line in index) == 1


def test_a_second_verification_of_one_library_keeps_the_others(verified, capsys, monkeypatch):
    """torch's script now reproduces: the new verification replaces the earlier `does not`
    (and its script), and the other groups keep theirs."""
    run, _, _ = verified
    before = json.loads((run / "verify.json").read_text())["groups"]
    now = "import numpy\nprint('BUG: torch misread a value')\nraise SystemExit(1)\n"
    monkeypatch.setitem(SCRIPTS, "torch", now)
    code = main(["findings", str(run), "--verify", "--library", "torch"])
    printed = capsys.readouterr().out
    assert "verified 1 finding(s)" in printed
    assert code == 0, f"got exit {code}, expected 0 (verify exits 0 once it has run)"
    assert printed.splitlines()[-1].startswith("FIX: torch: 1 defect(s) reproduce standalone")
    after = json.loads((run / "verify.json").read_text())
    assert after["groups"].keys() == before.keys() and after["verified"] == 1
    torch = next(e for e in after["groups"].values() if e["library"] == "torch")
    assert (torch["standalone"], torch["line"]) == ("reproduces", "BUG: torch misread a value"), (
        f"got {torch['standalone']!r} ({torch['line']!r}), expected the new verification"
    )
    assert (run / torch["script"]).read_text() == now
    assert {k: e for k, e in after["groups"].items() if e is not torch} == {
        k: e for k, e in before.items() if e["library"] != "torch"
    }
    assert after["summary"]["reproduces"] == 3 and after["summary"]["does not"] == 0


def test_upstream_pack_one_file_per_library_harness_and_ambiguous_left_out(
    tmp_path, generator, capsys
):
    run = _run_dir(tmp_path, libraries=("cupy", "torch"))
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    records[0]["rule"] = "CAI-DATA-READONLY-HONOURED"
    records[0]["check"] = "readonly"
    records[0]["message"] = "the write through the cupy view reached read-only memory"
    harness = {"library": "caiconform", "role": "producer", "why": "the adapter's upload"}
    unknown = {"library": None, "role": None, "why": "cannot be told"}
    records += [
        _record(3, "cupy", check="schema", culprit=harness, rule="CAI-PRODUCER-DESCRIBES-DATA"),
        _record(4, "torch", check="schema", culprit=unknown, rule="CAI-PRODUCER-DESCRIBES-DATA"),
    ]
    _write_journal(run, records)
    # cupy's write through a read-only view breaks a derived rule with no duty for its side:
    # `departs`, below the default defects, so both steps name the severities
    severity = ["--severity", "corrupts,departs"]
    verified = ["findings", str(run), "--verify", "--library", "cupy", "--timeout", "5"]
    assert main([*verified, *severity]) == 0
    capsys.readouterr()
    pack = tmp_path / "pack"
    assert main(["findings", str(run), "--upstream", str(pack), *severity]) == 0
    said = capsys.readouterr().out
    assert sorted(p.name for p in pack.iterdir()) == ["cupy.md", "torch.md"]
    assert "cupy.md (1 defect(s), 1 reproduce standalone, 1 already reported)" in said
    assert "2 defect(s) of caiconform's own code or with no single culprit left out" in said
    cupy = (pack / "cupy.md").read_text()
    assert cupy.startswith("# cupy: CUDA Array Interface defects")
    assert "caiconform" not in cupy.split("\n## ")[1].split("**Reproducer**")[1].split("```")[1]
    readonly = RULES["CAI-DATA-READONLY-HONOURED"]
    assert "## cupy (consumer) breaks CAI-DATA-READONLY-HONOURED" in cupy
    assert (
        "**Known**: Tracked: [Adding `writeable` to `flags`](https://github.com/cupy/cupy/issues/2616) (open)."
        in cupy
    )
    assert "- machine: Python 3.12.3, NVIDIA GPU, driver 580.159.04" in cupy
    assert "cupy-cuda13x 14.2.0" in cupy and "caiconform 0.1.0" not in cupy
    assert "```python\n" + SCRIPTS["cupy"].rstrip() + "\n```" in cupy
    assert "**What happens** (printed by the script above in a fresh process):" in cupy
    assert "BUG: cupy wrote through a read-only view" in cupy
    assert f"> {readonly.text}" in cupy and f"> {readonly.quote}" in cupy
    assert ("caiconform's reading" in cupy) == readonly.derived
    assert f"**Harm** (`departs`): {HARM['departs']}." in cupy
    torch = (pack / "torch.md").read_text()
    assert "**Standalone reproducer**: not verified" in torch
    assert "**What happens** (UNCONFIRMED: the script was not run" in torch
    assert "> torch misread the values" in torch
    assert "cannot be told" not in cupy + torch and "adapter's upload" not in cupy + torch


def test_bad_input_is_one_line_and_exit_2(tmp_path, generator, capsys, monkeypatch):
    assert main(["findings", str(tmp_path / "nope"), "--verify"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such directory" in err[0]
    run = _run_dir(tmp_path, libraries=("cupy",))
    assert main(["findings", str(run), "--verify", "--jobs", "0"]) == 2
    assert capsys.readouterr().err.strip() == "caiconform: error: --jobs must be at least 1, got 0"
    (run / "verify.json").write_text("{not json")
    assert main(["findings", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "verify.json: cannot be read" in err[0]
    (run / "verify.json").unlink()

    from caiconform.commands import _groups

    real = _groups.catalogue_groups

    def without_examples(run_dirs):
        run_data, groups = real(run_dirs)
        return run_data, [{**g, "count": 0, "reproducer": {}} for g in groups]

    monkeypatch.setattr(_groups, "catalogue_groups", without_examples)
    assert main(["findings", str(run), "--verify"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "caiconform: error: finding cupy-consumer-CAI-CONSUMER-READS-DESCRIBED-fail has no "
        "examples to build a reproducer from"
    ]
    assert not (run / "standalone").exists()


def test_caiconform_imports_are_found_in_every_spelling():
    source = (
        "import numpy, caiconform.spec as spec\n"
        "from caiconform import cli\n"
        "from . import sibling\n"
        "import importlib\n"
        "importlib.import_module('caiconform.report')\n"
        "__import__('caiconform')\n"
        "importlib.import_module('cupy')\n"
    )
    assert verify.caiconform_imports(source) == [
        "caiconform.spec",
        "caiconform",
        "caiconform.report",
        "caiconform",
    ]
    assert verify.caiconform_imports("import caiconformity\nimport numpy\n") == []
    child = "import subprocess\nCHILD = '''import torch\nfrom cuda.bindings import driver\n'''\n"
    assert verify.imported_modules(child) == ["subprocess", "torch", "cuda.bindings"]
    assert verify.imported_modules("DOC = '''not code: import it\nnow'''\n") == []
    with pytest.raises(SyntaxError):
        verify.caiconform_imports("def (:\n")


def test_classify_keeps_to_the_contract(monkeypatch):
    monkeypatch.setattr(verify, "no_gpu", lambda: None)
    bug = verify.classify(1, "setup\nBUG: wrong values\n", "")
    assert (bug["standalone"], bug["line"]) == ("reproduces", "BUG: wrong values")
    # a BUG line with exit 0, or exit 1 without one (a traceback), is no reproduction
    assert verify.classify(0, "BUG: x\n", "")["result"] == "error"
    traceback = verify.classify(1, "", "Traceback\nValueError: no cupy\n")
    assert traceback["result"] == "error" and "ValueError: no cupy" in traceback["detail"]
    assert traceback["standalone"] == "no verdict"
    assert verify.classify(-6, "BUG: x\n", "")["signal"] == "SIGABRT"
    assert verify.classify(None, "", "", timed_out=True)["result"] == "timeout"


def test_known_reports_table_is_well_formed():
    reports = upstream.known_reports()
    assert reports, "the shipped table is empty"
    for report in reports:
        assert report.rule in RULES
        assert report.url.startswith("https://github.com/") and "/issues/" in report.url
        assert report.title and report.state in ("open", "closed")
    group = {
        "library": "torch",
        "rule": "CAI-PORT-READONLY",
        "message": "TypeError: the read only flag is not supported, should always be False",
    }
    assert [r.url for r in upstream.reports_for(group, reports)] == [
        "https://github.com/pytorch/pytorch/issues/32868"
    ]
    assert upstream.reports_for({**group, "message": "another refusal"}, reports) == []
    assert upstream.reports_for({**group, "library": "cupy"}, reports) == []
    # cuda.cccl's strided read: named by its triage entry, matched by the finding's identity,
    # not by a word of its text (the table's word entry never matched the group)
    cccl = {
        "library": "cuda.cccl",
        "role": "consumer",
        "rule": "CAI-CONSUMER-READS-DESCRIBED",
        "outcome": "fail",
        "condition": "mutation in {broadcast, negative-strides, odd-strides}",
    }
    assert upstream.reports_for(cccl, reports) == []
    from caiconform.report import triage

    shipped = Path(triage.__file__).with_name(triage.TRIAGE_FILE).read_text(encoding="utf-8")
    triage.annotate_triage([cccl], triage.parse_triage(shipped))
    assert "https://github.com/NVIDIA/cccl/issues/3223" in [k["url"] for k in cccl["known_reports"]]
    for bad, said in [
        ("version = 2\n", "version 2, expected 1"),
        ('version = 1\n[[report]]\nlibrary = "x"\n', "report 1: missing or malformed 'rule'"),
        (
            'version = 1\n[[report]]\nlibrary = "x"\nrule = "NOPE"\nurl = "https://a"\n'
            'title = "t"\nstate = "open"\n',
            "unknown rule 'NOPE'",
        ),
        (
            'version = 1\n[[report]]\nlibrary = "x"\nrule = "CAI-MASK-TRUTH"\n'
            'url = "http://a"\ntitle = "t"\nstate = "open"\n',
            "is not https",
        ),
    ]:
        with pytest.raises(ValueError, match=said):
            upstream.parse_known_reports(bad, "t.toml")


def test_a_script_that_does_not_parse_is_the_generators_error_and_never_runs(tmp_path):
    group = {
        "library": "cupy",
        "role": "consumer",
        "rule": RULE,
        "outcome": "fail",
        "severity": "corrupts",
        "count": 1,
        "reproducer": {"cell": "roundtrip/reference/cupy"},
    }
    data = verify.verify_groups([group], tmp_path, lambda g: "def (:\n", timeout_s=5)
    (entry,) = data["groups"].values()
    assert (entry["standalone"], entry["result"]) == ("none", "generator error")
    assert entry["detail"].startswith("the script does not parse: line 1:")
    assert "exit" not in entry and (tmp_path / entry["script"]).exists()
