"""The report: loading journals, the matrix, Markdown and HTML rendering, merging, the CLI.

Fixtures are synthetic run directories in tests/data (two runs on different machines, with
findings, a crash, a hang, a skip, a shrunk record and a message that tries to inject markup).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from caiconform.cli import main
from caiconform.report.build import write_report
from caiconform.report.html import embed_json, render_html
from caiconform.report.load import ReportInputError, load_run
from caiconform.report.markdown import render_markdown, render_pages
from caiconform.report.matrix import build_matrix, pass_fraction
from caiconform.report.merge import merge_runs

DATA = Path(__file__).parent / "data"
RUN_A = DATA / "run-h100"
RUN_B = DATA / "run-h200"


def _copy(run: Path, tmp_path: Path) -> Path:
    target = tmp_path / run.name
    shutil.copytree(run, target)
    return target


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def _cell(matrix: dict, check: str, producer: str | None, consumer: str | None) -> dict:
    (cell,) = [
        c
        for c in matrix["cells"]
        if (c["check"], c["producer"], c["consumer"]) == (check, producer, consumer)
    ]
    return cell


# --- loading ----------------------------------------------------------------------------------


def test_load_run_reads_every_record_and_the_env():
    run = load_run(RUN_A)
    assert len(run.records) == len(_records(RUN_A))
    (run_id,) = run.envs
    assert run.envs[run_id]["gpu"]["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert run.dirs[run_id] == RUN_A
    assert run.warnings == []


def test_missing_directory_is_one_clear_error(tmp_path):
    with pytest.raises(ReportInputError, match="no such directory"):
        load_run(tmp_path / "nope")


def test_directory_without_journal_is_refused(tmp_path):
    with pytest.raises(ReportInputError, match=r"no results\.jsonl or results\.jsonl\.gz"):
        load_run(tmp_path)


def test_empty_journal_is_refused(tmp_path):
    (tmp_path / "results.jsonl").write_text("\n")
    with pytest.raises(ReportInputError, match="holds no results"):
        load_run(tmp_path)


def test_broken_line_in_the_middle_names_file_and_line(tmp_path):
    run = _copy(RUN_A, tmp_path)
    lines = (run / "results.jsonl").read_text().splitlines()
    lines[3] = lines[3][:40]
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ReportInputError, match=r"results\.jsonl:4: not valid JSON"):
        load_run(run)


def test_truncated_last_line_is_dropped_with_a_warning(tmp_path):
    run = _copy(RUN_A, tmp_path)
    text = (run / "results.jsonl").read_text()
    (run / "results.jsonl").write_text(text + '{"run_id": "x", "seq": 99, "che')
    loaded = load_run(run)
    assert len(loaded.records) == len(_records(RUN_A))
    assert any("dropped a truncated last line" in w for w in loaded.warnings)


def test_record_with_unknown_outcome_is_refused(tmp_path):
    record = {"run_id": "r", "seq": 0, "check": "schema", "outcome": "maybe"}
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(ReportInputError, match=r":1: outcome 'maybe' is not one of pass"):
        load_run(tmp_path)


def test_record_missing_keys_is_refused(tmp_path):
    (tmp_path / "results.jsonl").write_text('{"run_id": "r", "seq": 0}\n{"run_id": "r"}\n')
    with pytest.raises(ReportInputError, match="record lacks check, outcome"):
        load_run(tmp_path)


def test_broken_env_json_is_refused(tmp_path):
    run = _copy(RUN_A, tmp_path)
    (run / "env.json").write_text("{not json")
    with pytest.raises(ReportInputError, match=r"env\.json: not valid JSON"):
        load_run(run)


def test_missing_env_json_is_a_warning(tmp_path):
    run = _copy(RUN_A, tmp_path)
    (run / "env.json").unlink()
    loaded = load_run(run)
    assert any("no env.json" in w for w in loaded.warnings)


def test_gzip_journal_is_read(tmp_path):
    run = _copy(RUN_A, tmp_path)
    journal = run / "results.jsonl"
    with gzip.open(run / "results.jsonl.gz", "wt") as fh:
        fh.write(journal.read_text())
    journal.unlink()
    assert len(load_run(run).records) == len(_records(RUN_A))


def test_cut_gzip_journal_keeps_what_was_read(tmp_path):
    run = _copy(RUN_A, tmp_path)
    journal = run / "results.jsonl"
    packed = gzip.compress(journal.read_text().encode())
    journal.unlink()
    (run / "results.jsonl.gz").write_bytes(packed[: len(packed) * 3 // 4])
    loaded = load_run(run)
    assert 0 < len(loaded.records) < len(_records(RUN_A))
    assert any("ends early" in w for w in loaded.warnings)


# --- the matrix -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matrix() -> dict:
    return build_matrix(load_run(RUN_A), RUN_A)


def test_cells_count_outcomes_per_check_and_pair(matrix):
    cell = _cell(matrix, "roundtrip", "numba", "torch")
    assert cell["counts"] == {"pass": 2, "rejected": 1}
    assert cell["tested"] == 3
    assert cell["pass_fraction"] == pytest.approx(2 / 3)
    assert _cell(matrix, "streams", "jax", "reference")["counts"] == {"hang": 1}


def test_families_come_in_the_runs_order(matrix):
    # caiconform.spec.families.FAMILIES order (cheap dict-only checks first), not alphabetical
    assert list(matrix["families"]) == ["schema", "roundtrip", "streams"]


def test_single_role_family_has_no_consumer(matrix):
    assert matrix["families"]["schema"]["consumers"] == [None]
    assert len(matrix["families"]["schema"]["producers"]) == 5


def test_shrunk_records_are_not_counted_but_their_repro_comes_first(matrix):
    records = _records(RUN_A)
    shrunk = [r for r in records if r["shrunk"]]
    assert len(shrunk) == 1
    cell = _cell(matrix, "schema", "torch", None)
    assert cell["counts"] == {"pass": 3, "fail": 1}
    (group,) = [f for f in matrix["findings"] if f["rule"] == "CAI-DATA-ZERO-SIZE-NULL"]
    assert group["count"] == 1
    assert group["repros"][0] == shrunk[0]["repro"]
    assert matrix["summary"]["results"] == len(records) - 1


def test_all_skipped_cell_has_no_fraction(matrix):
    cell = _cell(matrix, "streams", "reference", "jax")
    assert cell["tested"] == 0
    assert cell["pass_fraction"] is None
    assert pass_fraction({"skip": 3}) is None


def test_scores_per_library_and_role(matrix):
    jax = matrix["scores"]["jax"]
    assert jax["producer"] == {"passed": 3, "tested": 4, "score": 0.75}
    # jax only ever consumed in a skipped cell: no score as consumer
    assert jax["consumer"] == {"passed": 0, "tested": 0, "score": None}


def test_findings_are_worst_first_and_cite_catalogue_rules(matrix):
    outcomes = [f["outcome"] for f in matrix["findings"]]
    assert outcomes[0] == "crash"
    assert outcomes.index("hang") < outcomes.index("fail") < outcomes.index("rejected")
    assert set(matrix["rules"]) == {
        "CAI-DATA-ZERO-SIZE-NULL",
        "CAI-SYNC-CONSUMER",
        "CAI-PORT-NEGATIVE-STRIDES",
    }
    assert matrix["rules"]["CAI-SYNC-CONSUMER"]["level"] == "MUST"
    sync = next(f for f in matrix["findings"] if f["rule"] == "CAI-SYNC-CONSUMER")
    assert (sync["seen"], sync["expected"]) == ("-1.0", "1.0")


def test_skip_reasons_are_kept(matrix):
    (skip,) = matrix["skips"]
    assert skip["reason"].startswith("jax: no CAI consumer path")


def test_repro_links_are_relative_to_the_output_directory(tmp_path):
    out = tmp_path / "site" / "report"
    out.mkdir(parents=True)
    matrix = build_matrix(load_run(RUN_A), out)
    hrefs = [href for f in matrix["findings"] for href in f["repros"]]
    assert hrefs
    for href in hrefs:
        assert not Path(href).is_absolute()
        assert (out / href).resolve().is_file()


def test_non_finite_numbers_become_strings(tmp_path):
    record = {"run_id": "r", "seq": 0, "check": "c", "outcome": "fail", "params": {"x": None}}
    record_line = json.dumps(record).replace("null", "NaN")
    (tmp_path / "results.jsonl").write_text(record_line + "\n")
    matrix = build_matrix(load_run(tmp_path), tmp_path)
    assert matrix["findings"][0]["params"] == {"x": "nan"}
    json.loads(json.dumps(matrix, allow_nan=False))


# --- merging ----------------------------------------------------------------------------------


def test_merge_dedupes_by_run_id_and_seq_and_keeps_envs_per_run():
    a, b = load_run(RUN_A), load_run(RUN_B)
    merged = merge_runs([a, b, load_run(RUN_A)])
    assert len(merged.records) == len(a.records) + len(b.records)
    assert any("dropped 57 duplicate" in w for w in merged.warnings)
    gpus = {env["gpu"]["devices"][0]["name"] for env in merged.envs.values()}
    assert gpus == {"NVIDIA H100 80GB HBM3", "NVIDIA H200"}
    matrix = build_matrix(merged, RUN_A)
    assert _cell(matrix, "roundtrip", "numba", "torch")["counts"] == {"pass": 2, "rejected": 2}
    (negative,) = [f for f in matrix["findings"] if f["rule"] == "CAI-PORT-NEGATIVE-STRIDES"]
    assert len(negative["repros"]) == 2  # one per run, each from its own directory


# --- rendering --------------------------------------------------------------------------------


def test_markdown_has_a_grid_per_family_and_escapes_markup(matrix):
    text = render_markdown(matrix)
    assert "### roundtrip" in text and "### streams" in text
    assert "| **numba** | 2/2 | 2/2 | 2/2 | 2/3 rejected:1 |" in text
    pages = render_pages(matrix)
    # the rule's text is on the page of the library that broke it, with the message
    (page,) = [t for name, t in pages.items() if "CAI-SYNC-CONSUMER" in t and "libraries/" in name]
    assert "consumer side" in page and "**message**" in page
    for body in pages.values():
        assert "<b>" not in body
    assert any("&lt;b&gt;not markup" in body for body in pages.values())
    assert "NVIDIA H100 80GB HBM3" in text


def test_html_is_self_contained(matrix):
    page = render_html(matrix)
    assert "default-src 'none'" in page  # the browser may fetch nothing
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(", page)
    assert not re.search(r"https?://", page.split('<script id="cai-data"')[0])


def test_html_embeds_the_matrix_without_breaking_out_of_the_script(matrix):
    page = render_html(matrix)
    payload = re.search(r'<script id="cai-data" type="application/json">(.*?)</script>', page, re.S)
    assert payload is not None
    assert "</script>" not in payload.group(1)
    assert json.loads(payload.group(1)) == matrix
    assert embed_json("</script><!--&") == '"\\u003c/script\\u003e\\u003c!--\\u0026"'


def test_html_title_is_escaped(matrix):
    assert "<title>a &lt;b&gt; c</title>" in render_html(matrix, "a <b> c")


# --- the command ------------------------------------------------------------------------------


def test_cli_writes_the_report_files(tmp_path, capsys):
    out = tmp_path / "out"
    # the runs hold a crash and a MUST-level fail: at the default --fail-on the status is 1
    assert main(["report", str(RUN_A), "--out", str(out), "--merge", str(RUN_B)]) == 1
    assert {p.name for p in out.iterdir()} == {
        "matrix.json",
        "matrix.md",
        "index.html",
        "findings.json",
        "libraries",
        "details",
    }
    matrix = json.loads((out / "matrix.json").read_text())
    assert len(matrix["runs"]) == 2
    printed = capsys.readouterr().out
    assert printed.startswith("FIX: the matrix: ")
    assert "62 results; 5 defect(s), one per bug, in 5 group(s) (" in printed
    assert "finding group" not in printed and "non-conformance" not in printed


def test_cli_writes_into_the_run_directory_by_default(tmp_path):
    run = _copy(RUN_A, tmp_path)
    assert main(["report", str(run), "--fail-on", "none"]) == 0
    assert (run / "index.html").is_file()


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: d / "missing", "no such directory"),
        (lambda d: d, "no results.jsonl"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys, setup, message):
    assert main(["report", str(setup(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_cli_broken_journal_is_exit_2(tmp_path, capsys):
    (tmp_path / "results.jsonl").write_text('{"run_id": 1}\n{broken\n{"run_id": 2}\n')
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("caiconform: error: ") and "results.jsonl:1: record lacks" in err


@pytest.mark.parametrize("name", ["results.jsonl", "env.json"])
def test_cli_json_nested_too_deeply_is_exit_2(tmp_path, capsys, name):
    (tmp_path / "results.jsonl").write_text((RUN_A / "results.jsonl").read_text())
    (tmp_path / name).write_text("[" * 100_000 + "]" * 100_000 + "\n")
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("caiconform: error: ") and len(err.splitlines()) == 1
    assert f"{name}" in err and "nested too deeply" in err


def test_write_report_refuses_a_file_as_output(tmp_path):
    target = tmp_path / "file"
    target.write_text("")
    with pytest.raises(ReportInputError, match="not a directory"):
        write_report([RUN_A], target)


def test_cli_unwritable_report_file_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "matrix.json").mkdir()  # stands for a file the user may not write
    assert main(["report", str(RUN_A), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("caiconform: error: ") and len(err.splitlines()) == 1
    assert "matrix.json: cannot write" in err


# --- the user docs stay true to the CLI --------------------------------------------------------

DOCS = Path(__file__).parent.parent / "docs"
USER_DOCS = ("ci.md", "adapters.md", "reports.md", "expectations.md")


def _documented_flags() -> dict[str, set[str]]:
    """command -> every `--flag` written after `caiconform <command>` in the docs' code: fenced
    blocks and inline code spans."""
    found: dict[str, set[str]] = {}
    for name in USER_DOCS:
        fenced = False
        for line in (DOCS / name).read_text().splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            for code in [line] if fenced else re.findall(r"`([^`]*)`", line):
                for command, rest in re.findall(r"^\s*caiconform ([a-z-]+)\b(.*)", code):
                    flags = re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest.split("#")[0])
                    found.setdefault(command, set()).update(flags)
    return found


def test_documented_cli_flags_exist():
    import argparse
    import importlib

    from caiconform.cli import COMMANDS

    documented = _documented_flags()
    assert {"report", "run"} <= set(documented)
    assert {"--out", "--merge", "--expectations", "--title"} <= documented["report"]
    for command, flags in documented.items():
        assert command in COMMANDS, f"docs mention `caiconform {command}`, which does not exist"
        parser = argparse.ArgumentParser()
        importlib.import_module(COMMANDS[command]).add_arguments(parser)
        known = {option for action in parser._actions for option in action.option_strings}
        assert flags <= known, f"caiconform {command}: documented {flags - known} do not exist"


def test_a_correct_rejection_counts_as_passed_and_is_no_finding(tmp_path):
    from caiconform.results.record import EXPECT_REJECTION

    base = {"run_id": "r", "check": "adversarial", "producer": None, "consumer": "cupy"}
    records = [
        {**base, "seq": 0, "outcome": "pass"},
        {
            **base,
            "seq": 1,
            "outcome": "rejected",
            "rule": "CAI-STREAM-ZERO-FORBIDDEN",
            "expected": EXPECT_REJECTION,
        },
        {
            **base,
            "seq": 2,
            "outcome": "rejected",
            "rule": "CAI-PORT-NEGATIVE-STRIDES",
            "expected": "the values read back",
        },
    ]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    matrix = build_matrix(load_run(tmp_path), tmp_path)
    (cell,) = matrix["cells"]
    assert cell["counts"] == {"pass": 1, "rejected": 2}
    assert (cell["passed"], cell["tested"], cell["correct_rejections"]) == (2, 3, 1)
    assert cell["findings"] == {"rejected": 1}
    assert [f["rule"] for f in matrix["findings"]] == ["CAI-PORT-NEGATIVE-STRIDES"]
    assert matrix["summary"]["pass_fraction"] == pytest.approx(2 / 3)
    assert "| **—** | 2/3 rejected:1 |" in render_markdown(matrix)
