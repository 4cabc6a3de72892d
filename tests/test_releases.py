"""Conformance across releases: `caiconform releases` charts the findings of one library's
releases (`report.releases`), dates another run's findings by the chart, and the plan of
`nox -s releases` (scripts/releases_plan.py) turns its arguments into one install and one run per
release. Synthetic run directories, no GPU."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from caiconform.cli import main
from caiconform.report.releases import (
    ABSENT,
    FOUND,
    NOT_RUN,
    PARTLY_RUN,
    ReleaseRun,
    build_chart,
)
from caiconform.results.record import cell_key

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0")
#: numba misreads an export in 0.27.0 and 0.28.0 only (fixed in 0.29.0)
READS = ("roundtrip", "reference", "numba", "fail", "CAI-CONSUMER-READS-DESCRIBED")
#: cupy's, in every release (cupy is fixed: not the charted library)
MASK = ("streams", None, "cupy", "fail", "CAI-SYNC-CONSUMER")
#: numba's export misdescribed, up to 0.28.0; 0.29.0 did not run its cell, 0.30.0 ran it clean
EXPORT = ("agreement", "numba", "reference", "fail", "CAI-PRODUCER-DESCRIBES-DATA")


def _record(seq, cell, outcome=None, run_id="r"):
    check, producer, consumer, failing, rule = cell
    outcome = outcome or failing
    return {
        "run_id": run_id,
        "seq": seq,
        "check": check,
        "producer": producer,
        "consumer": consumer,
        "outcome": outcome,
        "rule": rule if outcome != "pass" else None,
        "params": {"n": seq},
        "message": f"{outcome} [{rule}]",
        "expected": "x",
        "shrunk": False,
    }


def _write_run(directory: Path, version: str, found: list, passed: list, library="numba-cuda"):
    """A run directory of one release: a failing record per cell of `found`, a passing one per
    cell of `passed`, cells.jsonl naming each of those cells finished."""
    directory.mkdir(parents=True)
    records = [_record(i, c, run_id=version) for i, c in enumerate(found)]
    records += [_record(100 + i, c, "pass", run_id=version) for i, c in enumerate(passed)]
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cells = dict.fromkeys(cell_key(r) for r in records)
    (directory / "cells.jsonl").write_text("".join(json.dumps({"cell": c}) + "\n" for c in cells))
    libraries = {"numba-cuda": "0.30.0", "cupy-cuda13x": "14.2.0", "cuda-core": "1.2.0"}
    libraries[library] = version
    (directory / "env.json").write_text(json.dumps({"libraries": libraries}))
    return directory


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("releases")
    plan = {
        "0.26.0": ([MASK, EXPORT], [READS]),
        "0.27.0": ([MASK, EXPORT, READS], []),
        "0.28.0": ([MASK, EXPORT, READS], []),
        "0.29.0": ([MASK], [READS]),  # EXPORT's cell did not run
        "0.30.0": ([MASK], [READS, EXPORT]),
    }
    # given out of order: the chart orders them by version
    order = ["0.29.0", "0.26.0", "0.30.0", "0.27.0", "0.28.0"]
    return [_write_run(root / f"numba-cuda-{v}", v, *plan[v]) for v in order]


def _row(chart: dict, library: str, rule: str) -> dict:
    (row,) = [r for r in chart["rows"] if (r["library"], r["rule"]) == (library, rule)]
    return row


@pytest.fixture(scope="module")
def chart(releases, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("chart")
    assert main(["releases", *map(str, releases), "--out", str(out)]) == 0
    return json.loads((out / "releases.json").read_text())


def test_the_chart_says_first_seen_fixed_in_and_not_run(chart):
    assert chart["library"] == "numba-cuda"
    assert chart["versions"] == list(VERSIONS)
    reads = _row(chart, "numba", "CAI-CONSUMER-READS-DESCRIBED")
    assert reads["statuses"] == [ABSENT, FOUND, FOUND, ABSENT, ABSENT]
    assert (reads["first_seen"], reads["last_seen"], reads["fixed_in"]) == (
        "0.27.0",
        "0.28.0",
        "0.29.0",
    )
    assert reads["since"] == "since 0.27.0"  # 0.26.0 ran its cell without it
    mask = _row(chart, "cupy", "CAI-SYNC-CONSUMER")
    assert mask["statuses"] == [FOUND] * 5 and mask["fixed_in"] is None
    assert mask["since"] == "since ≤0.26.0" and not mask["of_library"]
    export = _row(chart, "numba", "CAI-PRODUCER-DESCRIBES-DATA")
    assert export["statuses"] == [FOUND, FOUND, FOUND, NOT_RUN, ABSENT]
    # absent in 0.30.0, but 0.29.0 did not run it: no release is said to have fixed it
    assert export["fixed_in"] is None and export["not_run_after"] == "0.29.0"
    # the charted library's findings first
    assert [r["of_library"] for r in chart["rows"]] == [True, True, False]
    assert chart["summary"]["fixed"] == [reads["id"]]
    assert chart["summary"]["tested_nothing"] == []


def test_a_release_that_ran_no_cell_is_said_not_run(releases, tmp_path, capsys):
    broken = tmp_path / "numba-cuda-0.31.0"
    broken.mkdir()
    skip = {**_record(0, READS, "skip", run_id="0.31.0"), "index": None, "rule": None}
    (broken / "results.jsonl").write_text(json.dumps(skip) + "\n")
    (broken / "cells.jsonl").write_text(json.dumps({"cell": cell_key(skip), "skipped": "no"}))
    env = {"libraries": {"numba-cuda": "0.31.0", "cupy-cuda13x": "14.2.0", "cuda-core": "1.2.0"}}
    (broken / "env.json").write_text(json.dumps(env))
    out = tmp_path / "chart"
    assert main(["releases", *map(str, releases), str(broken), "--out", str(out)]) == 0
    assert "NOT RUN: 0.31.0 ran no cell" in capsys.readouterr().out
    chart = json.loads((out / "releases.json").read_text())
    assert {r["statuses"][-1] for r in chart["rows"]} == {NOT_RUN}
    assert "**Not run**: 0.31.0 ran no cell" in (out / "releases.md").read_text()


def test_a_release_whose_adapters_would_not_load_says_why(releases, tmp_path, capsys):
    """Its cells are `not run`, and the chart says which adapters of the charted release would
    not load and why (adapters.json), not only that nothing ran; another library's unavailable
    adapter (another version) is not the release's."""
    broken = tmp_path / "numba-cuda-0.25.0"
    broken.mkdir()
    skip = {**_record(0, READS, "skip", run_id="0.25.0"), "index": None, "rule": None}
    (broken / "results.jsonl").write_text(json.dumps(skip) + "\n")
    (broken / "cells.jsonl").write_text(json.dumps({"cell": cell_key(skip), "skipped": "no"}))
    env = {"libraries": {"numba-cuda": "0.25.0", "cupy-cuda13x": "14.2.0", "cuda-core": "1.2.0"}}
    (broken / "env.json").write_text(json.dumps(env))
    why = "numba.cuda not importable: AttributeError: no attribute 'NPDatetime'"
    adapters = {
        "numba": {"available": False, "reason": why, "version": "0.25.0"},
        "numba-kernel": {"available": False, "reason": why, "version": "0.25.0+shim(x)"},
        "cupy": {"available": True, "reason": "", "version": "14.2.0"},
        "warp": {"available": False, "reason": "not installed", "version": None},
    }
    (broken / "adapters.json").write_text(json.dumps(adapters))
    out = tmp_path / "chart"
    assert main(["releases", str(broken), *map(str, releases), "--out", str(out)]) == 0
    assert f"WOULD NOT LOAD: 0.25.0: numba, numba-kernel: {why}" in capsys.readouterr().out
    chart = json.loads((out / "releases.json").read_text())
    assert chart["releases"][0]["unavailable"] == {"numba": why, "numba-kernel": why}
    assert chart["summary"]["unavailable"] == ["0.25.0"]
    assert all(r["statuses"][0] == NOT_RUN for r in chart["rows"])
    assert f"- 0.25.0: numba, numba-kernel: {why}" in (out / "releases.md").read_text()
    assert "0.25.0 would not load: numba: " in (out / "releases.html").read_text()


def test_per_release_counts(chart):
    counts = {
        r["version"]: (r["findings"], r["of_library"], r["fixed_here"]) for r in chart["releases"]
    }
    assert counts == {
        "0.26.0": (2, 1, 0),
        "0.27.0": (3, 2, 0),
        "0.28.0": (3, 2, 0),
        "0.29.0": (1, 0, 1),
        "0.30.0": (1, 0, 0),
    }


def test_markdown_and_html_tables(releases, tmp_path):
    assert main(["releases", *map(str, releases), "--out", str(tmp_path)]) == 0
    md = (tmp_path / "releases.md").read_text()
    header = "| finding | severity | rule | " + " | ".join(VERSIONS) + " | since | fixed in |"
    assert header in md
    (line,) = [ln for ln in md.splitlines() if "CAI-CONSUMER-READS-DESCRIBED" in ln]
    assert "| — | ✓ | ✓ | — | — | since 0.27.0 | 0.29.0 |" in line
    (line,) = [ln for ln in md.splitlines() if "CAI-PRODUCER-DESCRIBES-DATA" in ln]
    assert "| not run | — | since ≤0.26.0 | not run in 0.29.0 |" in line
    # cupy's, in every release with cupy fixed, is counted, not listed
    assert "CAI-SYNC-CONSUMER" not in md and "Not listed: 1 finding(s)" in md
    page = (tmp_path / "releases.html").read_text()
    assert 'id="releases-numba-cuda"' in page and "<script" not in page


def test_a_finding_led_by_another_member_in_another_release_is_one_row():
    """One bug folded from two groups: the lead is the member with more examples, which
    differs between the two releases; the rows join on the shared member."""

    def groups(lead_rule, other_rule):
        ids = [f"cupy/consumer/{r}/rejected-valid" for r in (lead_rule, other_rule)]
        lead = {
            "library": "cupy",
            "role": "consumer",
            "rule": lead_rule,
            "outcome": "rejected-valid",
            "severity": "refuses-valid",
            "count": 5,
            "cells": ["zero_size/-/cupy"],
            "finding": ids[0],
            "folded": [{"group": ids[1]}],
        }
        member = {**lead, "rule": other_rule, "count": 1, "folded": None}
        member.update(finding=ids[0], folded_into=ids[0], cells=["roundtrip/reference/cupy"])
        return [lead, member]

    a = ReleaseRun(Path("a"), "1.0", {}, groups("R-A", "R-B"), set())
    b = ReleaseRun(Path("b"), "2.0", {}, groups("R-B", "R-A"), set())
    cells = {"zero_size/-/cupy", "roundtrip/reference/cupy"}
    c = ReleaseRun(Path("c"), "3.0", {}, [], {"zero_size/-/cupy"})
    d = ReleaseRun(Path("d"), "4.0", {}, [], cells)
    chart = build_chart([a, b, c, d], "cupy-cuda13x", {})
    (row,) = chart["rows"]
    assert row["statuses"] == [FOUND, FOUND, PARTLY_RUN, ABSENT]
    assert row["id"] == "cupy/consumer/R-B/rejected-valid"  # the newest lead's identity
    assert row["cells"] == sorted(cells) and row["fixed_in"] is None


def test_annotate_dates_another_runs_findings_and_the_report_keeps_it(releases, tmp_path, capsys):
    """Two charts date one run: numba-cuda's releases and cuda-core's (cupy's finding, which
    cuda-core 1.2.0 fixed, is dated by cuda-core's chart only: in numba-cuda's it is a fixed
    library's finding in every release)."""
    from caiconform.report.build import write_report

    today = _write_run(tmp_path / "today", "0.28.0", [MASK, READS], [])
    env = json.loads((today / "env.json").read_text())
    env["libraries"]["cuda-core"] = "1.1.0"
    (today / "env.json").write_text(json.dumps(env))
    write_report([today])
    core = [
        _write_run(tmp_path / f"cuda-core-{v}", v, found, passed, library="cuda-core")
        for v, found, passed in (
            ("1.0.0", [MASK, READS], []),
            ("1.1.0", [MASK, READS], []),
            ("1.2.0", [READS], [MASK]),
        )
    ]
    for runs, library in ((releases, "numba-cuda"), (core, "cuda-core")):
        out = tmp_path / f"chart-{library}"
        args = ["releases", *map(str, runs), "--out", str(out), "--annotate", str(today)]
        assert main(args) == 0
        assert (today / f"releases-{library}.json").is_file()
    said = capsys.readouterr().out
    assert (
        "dated 2 finding(s) of" in said
        and "by cuda-core's releases (it has 1.1.0); 1 fixed" in said
    )

    def dated(path):
        groups = json.loads((path / "findings.json").read_text())["groups"]
        return {g["rule"]: {e["library"]: e for e in g.get("releases") or []} for g in groups}

    groups = json.loads((today / "findings.json").read_text())["groups"]
    (entries,) = [g["releases"] for g in groups if g["rule"] == "CAI-CONSUMER-READS-DESCRIBED"]
    # numba's finding in both charts: its own library's first (cuda-core's file is read first)
    assert [e["library"] for e in entries] == ["numba-cuda", "cuda-core"]
    reads = dated(today)["CAI-CONSUMER-READS-DESCRIBED"]["numba-cuda"]
    assert reads["since"] == "since 0.27.0" and reads["fixed_in"] == "0.29.0"
    assert reads["upgrade"] == "fixed in numba-cuda 0.29.0 (this run has 0.28.0)"
    mask = dated(today)["CAI-SYNC-CONSUMER"]
    assert mask["numba-cuda"]["upgrade"] is None and mask["numba-cuda"]["since"] == "since ≤0.26.0"
    assert mask["cuda-core"]["upgrade"] == "fixed in cuda-core 1.2.0 (this run has 1.1.0)"
    written = write_report([today])  # rebuilt: the charts beside it still date them
    assert dated(today)["CAI-CONSUMER-READS-DESCRIBED"]["numba-cuda"]["since"] == "since 0.27.0"
    assert [c["library"] for c in written.matrix["releases"]] == ["cuda-core", "numba-cuda"]
    page = (today / "index.html").read_text()
    assert 'id="releases-numba-cuda"' in page and 'id="releases-cuda-core"' in page
    assert main(["findings", str(today), "--library", "numba"]) == 0
    line = "**Across releases**: numba-cuda since 0.27.0; last seen in 0.28.0; fixed in 0.29.0"
    assert line + "; an upgrade fixes it." in capsys.readouterr().out
    assert main(["findings", str(today), "--library", "cupy"]) == 0
    # cupy's own library was not charted: the chart whose release fixed it speaks
    line = "**Across releases**: cuda-core since ≤1.0.0; last seen in 1.1.0; fixed in 1.2.0"
    assert line + "; an upgrade fixes it." in capsys.readouterr().out


def test_without_a_chart_nothing_is_dated(tmp_path):
    from caiconform.report.build import write_report

    run = _write_run(tmp_path / "run", "0.28.0", [READS], [])
    written = write_report([run])
    assert written.matrix["releases"] is None
    assert all("releases" not in g for g in written.matrix["catalogue"]["groups"])


def test_a_copy_without_the_journal_is_charted_from_its_findings(releases, tmp_path):
    import shutil

    from caiconform.report.build import write_report

    copies = []
    for run in sorted(releases)[:3]:  # 0.26.0, 0.27.0, 0.28.0
        copy = tmp_path / run.name
        shutil.copytree(run, copy)
        write_report([copy])
        (copy / "results.jsonl").unlink()
        copies.append(copy)
    assert main(["releases", *map(str, copies), "--out", str(tmp_path / "c")]) == 0
    chart = json.loads((tmp_path / "c" / "releases.json").read_text())
    assert _row(chart, "numba", "CAI-CONSUMER-READS-DESCRIBED")["statuses"] == [
        ABSENT,
        FOUND,
        FOUND,
    ]


@pytest.mark.parametrize(
    "case, words",
    [
        ("one run", "one was given"),
        ("not a dir", "not a run directory"),
        ("empty dir", "not a run directory (no results.jsonl"),
        ("mixed", "different libraries' versions mixed"),
        ("twice", "in more than one run"),
        ("same", "same version of every library"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(releases, tmp_path, capsys, case, words):
    other = _write_run(tmp_path / "core", "1.1.0", [MASK], [], library="cuda-core")
    twin = _write_run(tmp_path / "twin", "0.26.0", [MASK], [])
    given = {
        "one run": [releases[0]],
        "not a dir": [releases[0], tmp_path / "nope"],
        "empty dir": [releases[0], tmp_path],
        "mixed": [releases[0], other],
        "twice": [releases[1], twin, "--library", "numba"],
        "same": [releases[1], twin],
    }[case]
    if case == "same":
        given = [releases[1], releases[1]]
    assert main(["releases", *map(str, given)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("caiconform: error:") and words in err and "\n" not in err


# --- the nox session's plan ---------------------------------------------------------------


def _plan_module():
    spec = importlib.util.spec_from_file_location(
        "releases_plan", ROOT / "scripts/releases_plan.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("releases_plan", module)  # its dataclasses look their module up
    spec.loader.exec_module(sys.modules["releases_plan"])
    return sys.modules["releases_plan"]


def test_the_plan_makes_one_install_and_one_run_per_release():
    rp = _plan_module()
    words = "numba-cuda 0.26.0 0.27.0 --no-index --find-links .whl --libraries reference,numba"
    plan = rp.plan([*words.split(), "--checks", "roundtrip", "--with", "cupy-cuda13x"])
    assert [r.version for r in plan.releases] == ["0.26.0", "0.27.0"]
    first = plan.releases[0]
    assert first.out == "runs/releases/numba-cuda-0.26.0"
    assert first.venv == "releases-numba-cuda-0.26.0"
    assert first.install == (
        "--no-index",
        "--find-links",
        ".whl",
        "-e",
        ".",
        "cupy-cuda13x",
        "numba-cuda==0.26.0",
    )
    run = ("run", "--out", first.out, "--libraries", "reference,numba", "--checks", "roundtrip")
    assert first.run == (*run, "--seed", "1")  # one seed for every release
    assert plan.chart == (
        "releases",
        "runs/releases/numba-cuda-0.26.0",
        "runs/releases/numba-cuda-0.27.0",
        "--library",
        "numba-cuda",
        "--out",
        "runs/releases/numba-cuda",
    )
    other = rp.plan(["cuda-core", "0.4.0", "--seed", "7", "--out-root=o", "--system-site-packages"])
    assert other.releases[0].run == ("run", "--out", "o/cuda-core-0.4.0", "--seed", "7")
    assert other.system_site_packages and other.index == ()


@pytest.mark.parametrize(
    "words, message",
    [
        ([], "give the library"),
        (["numba-cuda"], "one or more versions"),
        (["numba-cuda", "0.26.0", "0.26.0"], "given twice"),
        (["numba-cuda", "latest"], "not a version"),
        (["numba-cuda", "0.26.0", "--out", "x"], "set by the plan"),
        (["numba-cuda", "0.26.0", "--find-links"], "needs a value"),
    ],
)
def test_the_plan_refuses_what_it_cannot_run(words, message):
    rp = _plan_module()
    with pytest.raises(rp.PlanError, match=message):
        rp.plan(words)


def test_the_constraints_lose_the_charted_library():
    rp = _plan_module()
    text = "numba_cuda==0.30.4\ncupy-cuda13x==14.2.0\nNumba-CUDA[cu13]>=0.2\ntorch==2.11.0\n"
    assert rp.constraints_without(text, "numba-cuda") == "cupy-cuda13x==14.2.0\ntorch==2.11.0\n"


def test_unmet_says_what_a_release_asks_for_that_is_not_here(tmp_path, monkeypatch):
    rp = _plan_module()
    info = tmp_path / "old_release-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: old-release\nVersion: 0.1\n"
        "Requires-Dist: hypothesis<1.0\nRequires-Dist: no-such-dist-here\n"
        "Requires-Dist: pytest; extra == 'test'\nRequires-Dist: rich\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import hypothesis

    assert rp.unmet("old-release") == [
        f"needs hypothesis<1.0: {hypothesis.__version__} here",
        "needs no-such-dist-here: not installed",
    ]
    assert rp.unmet("no-such-dist-here") == ["no-such-dist-here: not installed"]


def test_the_chart_goes_beside_the_runs_by_default(releases):
    assert main(["releases", *map(str, releases), "--json"]) == 0
    assert (releases[0].parent / "numba-cuda" / "releases.md").is_file()


def test_since_is_a_bound_after_a_release_that_did_not_run_it():
    from caiconform.report.releases import annotate_since

    lead = {
        "library": "numba",
        "role": "consumer",
        "rule": "CAI-X",
        "outcome": "fail",
        "severity": "corrupts",
        "count": 1,
        "cells": ["roundtrip/reference/numba"],
    }
    cell = {"roundtrip/reference/numba"}
    runs = [
        ReleaseRun(Path("a"), "1.0", {}, [], set()),  # would not import: no cell ran
        ReleaseRun(Path("b"), "2.0", {}, [dict(lead)], cell),
        ReleaseRun(Path("c"), "3.0", {}, [], cell),
    ]
    chart = build_chart(runs, "numba-cuda", {})
    (row,) = chart["rows"]
    assert row["statuses"] == [NOT_RUN, FOUND, ABSENT]
    assert row["since"] == "since ≤2.0" and row["fixed_in"] == "3.0"
    group = {**lead, "finding": row["id"]}
    annotate_since([group], [chart], {"numba-cuda": "3.0"})  # already on the release that fixed it
    assert group["releases"][0]["upgrade"] is None
    annotate_since([group], [chart], {"numba-cuda": "2.0"})
    assert group["releases"][0]["upgrade"] == "fixed in numba-cuda 3.0 (this run has 2.0)"


def test_a_cell_whose_journal_lost_lines_did_not_run(tmp_path):
    """cells.jsonl counts more examples than the journal holds (lines lost): the cell is not
    said to have run, so a finding absent from it is not fixed there."""
    runs = []
    for version, found, passed in (("1.0", [READS], []), ("2.0", [], [READS])):
        runs.append(_write_run(tmp_path / f"numba-cuda-{version}", version, found, passed))
    cells = runs[1] / "cells.jsonl"
    entry = {"cell": cell_key(_record(0, READS)), "counts": {"pass": 5}}
    cells.write_text(json.dumps(entry) + "\n")
    assert main(["releases", *map(str, runs), "--out", str(tmp_path / "c")]) == 0
    chart = json.loads((tmp_path / "c" / "releases.json").read_text())
    assert chart["rows"][0]["statuses"] == [FOUND, NOT_RUN]


def test_the_version_recorded_is_the_one_that_imports(tmp_path, monkeypatch):
    """A release installed ahead of the environment's own copy (gpu_releases.sh puts its venv
    first on PYTHONPATH): env.json records the release, the first on the path."""
    from caiconform.env import library_versions

    for folder, version in (("first", "0.26.0"), ("second", "0.30.4")):
        info = tmp_path / folder / f"numba_cuda-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: numba-cuda\nVersion: {version}\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path / "second"))
    monkeypatch.syspath_prepend(str(tmp_path / "first"))
    assert library_versions()["numba-cuda"] == "0.26.0"


def test_a_chart_made_before_dates_a_run_without_its_release_runs(chart, tmp_path, capsys):
    """`--chart releases.json --annotate RUN`: a published chart dates a later run (its runs
    are not kept); anything else with --chart is a one-line usage error."""
    from caiconform.report.build import write_report

    today = _write_run(tmp_path / "today", "0.28.0", [MASK, READS], [])
    write_report([today])
    published = tmp_path / "releases.json"
    published.write_text(json.dumps(chart))
    assert main(["releases", "--chart", str(published), "--annotate", str(today)]) == 0
    said = capsys.readouterr().out
    assert "dated 2 finding(s) of" in said and "1 fixed by an upgrade" in said
    groups = json.loads((today / "findings.json").read_text())["groups"]
    (reads,) = [g for g in groups if g["rule"] == "CAI-CONSUMER-READS-DESCRIBED"]
    (entry,) = reads["releases"]
    assert (entry["since"], entry["fixed_in"]) == ("since 0.27.0", "0.29.0")
    assert (today / "releases-numba-cuda.json").is_file()
    assert main(["releases", "--chart", str(published)]) == 2  # no --annotate
    assert main(["releases", str(today), "--chart", str(published), "--annotate", str(today)]) == 2
    published.write_text(json.dumps({"schema": "other"}))
    assert main(["releases", "--chart", str(published), "--annotate", str(today)]) == 2
    err = capsys.readouterr().err
    assert "not a releases chart" in err and "Traceback" not in err
    assert main(["releases"]) == 2
    assert "(none was given)" in capsys.readouterr().err


def test_an_adapter_whose_distribution_is_a_variant_is_charted_and_dated():
    """CuPy's runs name cupy-cuda13x in env.json: `--library cupy` charts that distribution,
    and its rows are cupy's own (the group's library is the adapter's name)."""
    from caiconform.report.releases import charted_library, of_distribution, since_line

    runs = [
        {"cupy-cuda13x": "14.1.0", "torch": "2.11.0"},
        {"cupy-cuda13x": "14.2.0", "torch": "2.11.0"},
    ]
    assert charted_library(runs, "cupy") == ("cupy-cuda13x", {})
    assert charted_library(runs, None) == ("cupy-cuda13x", {})
    assert of_distribution("cupy", "cupy-cuda13x") and of_distribution("numba", "numba-cuda")
    assert not of_distribution("numba", "numba-cuda-mlir")
    group = {
        "library": "cupy",
        "releases": [{"library": "cupy-cuda13x", "since": "since 14.1.0", "last_seen": "14.2.0"}],
    }
    assert since_line(group) == "cupy-cuda13x since 14.1.0; last seen in 14.2.0"
