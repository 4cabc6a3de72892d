"""Each library's conformance record (issue 44, item 4): per protocol and role the rules its
examples exercised, passed and failed, the findings whose culprit it is with their triage and
upstream reports, and its version, for each release measured (a column each), written by
`caiconform report` as `libraries/<name>.json`, `.html` and the top of `libraries/<name>.md`.

Runs are synthetic journals written here, so every count is known.
"""

from __future__ import annotations

import json
from pathlib import Path

from caiconform.cli import main
from caiconform.report.build import load_runs, write_records, write_report
from caiconform.report.conformance import Measured, build_records
from caiconform.report.matrix import build_matrix
from caiconform.results.record import EXPECT_REJECTION
from tests.test_report_verdict import rec

STRIDES = "DLPACK-STRIDES-ELEMENTS"
#: its triage (caiconform/report/triage.toml) names this upstream report
CUPY_ISSUE = "https://github.com/cupy/cupy/issues/10172"


def write_run(directory: Path, records: list[dict], cupy: str = "14.2.0") -> Path:
    directory.mkdir(parents=True)
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    env = {"libraries": {"cupy-cuda13x": cupy, "torch": "2.11.0"}}
    (directory / "env.json").write_text(json.dumps(env))
    return directory


def release_run(directory: Path, cupy: str, broken: int, run_id: str) -> Path:
    """cupy's DLPack export to the reference: `broken` of 5 examples misdescribe their strides
    (cupy the producer the rule binds); cupy reads torch's CAI exports; an adversarial mutant
    cupy refuses correctly."""
    records = [
        rec(i, "dlpack_roundtrip", "cupy", "reference", "pass", run_id=run_id)
        for i in range(5 - broken)
    ]
    records += [
        rec(10 + i, "dlpack_roundtrip", "cupy", "reference", "fail", STRIDES, run_id=run_id)
        for i in range(broken)
    ]
    records += [rec(20 + i, "roundtrip", "torch", "cupy", "pass", run_id=run_id) for i in range(3)]
    records.append(
        rec(
            30,
            "adversarial",
            None,
            "cupy",
            "rejected",
            params={"rule": "CAI-VERSION-KNOWN", "interface": {"version": 9}},
            expected=EXPECT_REJECTION,
            run_id=run_id,
        )
    )
    return write_run(directory, records, cupy)


def _role(record: dict, protocol: str, role: str) -> dict:
    (found,) = [p for p in record["protocols"] if p["protocol"] == protocol]
    (entry,) = [r for r in found["roles"] if r["role"] == role]
    return entry


def _rule(role: dict, rule: str) -> dict:
    (found,) = [r for r in role["rules"] if r["rule"] == rule]
    return found


def _measured(directory: Path, release: str | None) -> Measured:
    run = load_runs([directory])
    return Measured(release, run, build_matrix(run, directory))


def test_the_report_writes_each_library_s_record_as_json(tmp_path):
    run = release_run(tmp_path / "run", "14.2.0", broken=2, run_id="r1")
    # a failing defect: the record is written all the same
    assert main(["report", str(run)]) == 1
    record = json.loads((run / "libraries" / "cupy.json").read_text())
    assert record["schema"] == "caiconform-library-record/1"
    assert record["releases"] == [{"release": "14.2.0", "version": "14.2.0", "runs": ["r1"]}]
    producer = _role(record, "dlpack", "producer")
    assert producer["measured"][0] == {
        "cells": 1,
        "tested": 5,
        "passed": 3,
        "rules": len(producer["rules"]),
        "rules_failed": 1,
    }
    assert _rule(producer, STRIDES)["measured"] == [{"examples": 5, "passed": 3, "failed": 2}]
    # the consumer's rules: what torch's export binds is torch's, not cupy's record
    consumer = _role(record, "cai", "consumer")
    assert all(
        r["side"] in ("consumer", "both") or r["rule"] == "CAI-VERSION-KNOWN"
        for r in consumer["rules"]
    )
    assert not any(r["rule"] == "CAI-PRODUCER-DESCRIBES-DATA" for r in consumer["rules"])
    # a mutant the consumer refused: it passed the rule the mutant breaks
    assert _rule(consumer, "CAI-VERSION-KNOWN")["measured"] == [
        {"examples": 1, "passed": 1, "failed": 0}
    ]
    (finding,) = record["findings"]
    assert finding["id"] == f"cupy/producer/{STRIDES}/fail"
    assert (finding["protocol"], finding["role"], finding["rule"]) == (
        "dlpack",
        "producer",
        STRIDES,
    )
    assert finding["triage"]["verdict"] == "real"
    assert finding["measured"][0]["examples"] == 2
    assert CUPY_ISSUE in {r["url"] for r in finding["known_reports"]}
    # torch only produced here: its record has no consumer role and no finding
    torch = json.loads((run / "libraries" / "torch.json").read_text())
    assert [(p["protocol"], [r["role"] for r in p["roles"]]) for p in torch["protocols"]] == [
        ("cai", ["producer"])
    ]
    assert torch["findings"] == [] and torch["releases"][0]["version"] == "2.11.0"


def test_the_library_page_opens_with_the_record_and_links_its_defects(tmp_path):
    run = release_run(tmp_path / "run", "14.2.0", broken=2, run_id="r1")
    write_report([run])
    page = (run / "libraries" / "cupy.md").read_text()
    assert page.startswith("# cupy 14.2.0: conformance record\n")
    head = page[: page.index("## Findings")]
    assert "| DLPack | producer | 3/5 examples passed (60%) in 1 cell(s); 1 of " in head
    assert "[JSON](cupy.json)" in head and "[HTML](cupy.html)" in head
    findings = page[page.index("## Findings") : page.index("## As ")]
    assert f"[`{STRIDES}`](#g" in findings and "| real |" in findings and CUPY_ISSUE in findings
    assert f"| `{STRIDES}` | MUST, derived | 3/5, 2 failed |" in page
    # the defect's details follow, at the anchor the record links
    anchor = findings.split("](#", 1)[1].split(")", 1)[0]
    assert f'<a id="{anchor}"></a>' in page[page.index("## Each defect") :]


def test_each_record_has_an_html_page_linked_from_the_index(tmp_path):
    run = release_run(tmp_path / "run", "14.2.0", broken=1, run_id="r1")
    write_report([run])
    index = (run / "index.html").read_text()
    section = index[index.index('<section id="libraries">') :]
    assert 'href="libraries/cupy.html"' in section and 'href="libraries/torch.json"' in section
    assert '<a href="#libraries">Libraries</a>' in index
    page = (run / "libraries" / "cupy.html").read_text()
    assert "default-src 'none'" in page and "<script" not in page
    assert f'<a href="{CUPY_ISSUE}">' in page and "<code>DLPACK-STRIDES-ELEMENTS</code>" in page
    assert 'href="../index.html"' in page


def test_a_record_of_two_releases_has_a_column_each(tmp_path):
    old = release_run(tmp_path / "old", "14.1.0", broken=3, run_id="a")
    new = release_run(tmp_path / "new", "14.2.0", broken=0, run_id="b")
    records = build_records([_measured(old, "14.1"), _measured(new, "14.2")])
    cupy = records["cupy"]
    assert [r["release"] for r in cupy["releases"]] == ["14.1", "14.2"]
    assert [r["version"] for r in cupy["releases"]] == ["14.1.0", "14.2.0"]
    producer = _role(cupy, "dlpack", "producer")
    assert _rule(producer, STRIDES)["measured"] == [
        {"examples": 5, "passed": 2, "failed": 3},
        {"examples": 5, "passed": 5, "failed": 0},
    ]
    assert [m["rules_failed"] for m in producer["measured"]] == [1, 0]
    (finding,) = cupy["findings"]
    assert finding["measured"][0]["examples"] == 3 and finding["measured"][1] is None
    out = tmp_path / "records"
    written = write_records([_measured(old, "14.1"), _measured(new, "14.2")], out)
    assert out / "libraries" / "cupy.json" in written
    page = (out / "libraries" / "cupy.md").read_text()
    assert "| protocol | role | 14.1 | 14.2 |" in page
    assert f"| `{STRIDES}` | MUST, derived | 2/5, 3 failed | 5/5 |" in page
    assert "| 3 example(s), failing | not seen |" in page
    html = (out / "libraries" / "cupy.html").read_text()
    assert "<th>14.1</th><th>14.2</th>" in html
    # records of several runs stand alone: no summary or index to link back to
    assert "../matrix.md" not in page and "../index.html" not in html


def test_a_library_missing_from_a_release_s_run_is_not_measured_there(tmp_path):
    first = release_run(tmp_path / "first", "14.2.0", broken=0, run_id="a")
    second = write_run(
        tmp_path / "second", [rec(1, "roundtrip", "torch", "reference", "pass", run_id="b")]
    )
    records = build_records([_measured(first, None), _measured(second, None)])
    assert records["cupy"]["releases"][1] is None
    assert _role(records["cupy"], "dlpack", "producer")["measured"][1] is None
    assert [r["release"] for r in records["torch"]["releases"]] == ["2.11.0", "2.11.0"]


def test_runs_merged_from_machines_with_other_versions_name_each(tmp_path):
    first = release_run(tmp_path / "first", "14.1.0", broken=0, run_id="a")
    second = release_run(tmp_path / "second", "14.2.0", broken=0, run_id="b")
    run = load_runs([first, second])
    (release,) = build_records([Measured(None, run, build_matrix(run, first))])["cupy"]["releases"]
    assert release == {"release": "14.1.0, 14.2.0", "version": "14.1.0, 14.2.0", "runs": ["a", "b"]}


def test_a_finding_dated_by_a_chart_beside_the_run_says_since_when(tmp_path):
    """A release chart in the run directory (`caiconform releases --annotate`) dates the
    record's findings: the row's "across releases" is the issue texts' since line. CuPy's
    chart is of the distribution its env.json names, cupy-cuda13x, and still dates the
    findings of the adapter "cupy"."""
    from caiconform.report.releases import ReleaseRun, build_chart, chart_file

    run = release_run(tmp_path / "run", "14.2.0", broken=2, run_id="r1")
    write_report([run])
    (found,) = [
        g for g in json.loads((run / "findings.json").read_text())["groups"]
        if g.get("rule") == STRIDES
    ]  # fmt: skip
    cells = set(found["cells"])
    releases = [
        ReleaseRun(tmp_path / version, version, {}, [found], cells)
        for version in ("14.0.0", "14.2.0")
    ]
    chart = build_chart(releases, "cupy-cuda13x", {})
    (run / chart_file("cupy-cuda13x")).write_text(json.dumps(chart))
    write_report([run])
    record = json.loads((run / "libraries" / "cupy.json").read_text())
    (finding,) = [f for f in record["findings"] if f["rule"] == STRIDES]
    said = "cupy-cuda13x since ≤14.0.0; last seen in 14.2.0"
    assert finding["across_releases"] == said
    page = (run / "libraries" / "cupy.md").read_text()
    assert "| across releases | triage | upstream |" in page and f"| {said} | real |" in page
    assert f"<td>{said}</td>" in (run / "libraries" / "cupy.html").read_text()
