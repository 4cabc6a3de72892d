"""The CLI through a real subprocess: every input form of `check`, every exit status, and the
one-line errors (never a traceback)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from caiconform.spec.rules import RULES

VALID = {
    "shape": [2, 3],
    "strides": [12, 4],
    "typestr": "<f4",
    "data": [140000000000000, False],
    "version": 3,
    "stream": 1,
    "descr": [["", "<f4"]],
}
BROKEN = {**VALID, "stream": 0}

MODULE = """
VALID = {"shape": (2, 3), "strides": (12, 4), "typestr": "<f4",
         "data": (140000000000000, False), "version": 3}


class Array:
    @property
    def __cuda_array_interface__(self):
        return dict(VALID)


class Broken:
    __cuda_array_interface__ = {**VALID, "shape": [2, 3]}


class Namespace:
    array = Array()


array = Array()
broken = Broken()
ns = Namespace()
as_dict = dict(VALID)


def make():
    return Array()


def fails():
    raise RuntimeError("no device")


def exits():
    raise SystemExit(0)
"""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli")
    (path / "cai_fixture_mod.py").write_text(MODULE)
    (path / "cai_raises_on_import.py").write_text("raise ValueError('bad import')\n")
    (path / "cai_exits_on_import.py").write_text("raise SystemExit(0)\n")
    (path / "valid.json").write_text(json.dumps(VALID))
    (path / "broken.json").write_text(json.dumps(BROKEN))
    (path / "lines.jsonl").write_text(f"{json.dumps(VALID)}\n\n{json.dumps(BROKEN)}\n")
    (path / "bad.json").write_text('{"shape": [2, 3],')
    (path / "bad_pretty.json").write_text('{\n  "shape": [2, 3],\n  "typestr": <f4\n}\n')
    (path / "a_dir").mkdir()
    (path / "bad_line.jsonl").write_text(f"{json.dumps(VALID)}\n{{nope\n")
    (path / "array.json").write_text("[1, 2]")
    (path / "null.json").write_text("null")
    (path / "empty.json").write_text("\n")
    (path / "deep.json").write_text('{"shape": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (path / "masked.json").write_text(
        json.dumps(
            {**VALID, "mask": {"shape": [3], "typestr": "|b1", "data": [256, False], "version": 3}}
        )
    )
    return path


#: the checkout these tests belong to: its caiconform, not an installed one, is the one run
CHECKOUT = Path(__file__).resolve().parent.parent


def _pythonpath(*first: Path) -> str:
    """The checkout and `first` ahead of whatever PYTHONPATH already holds."""
    kept = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([str(CHECKOUT), *map(str, first), *filter(None, [kept])])


def cli(workdir: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": _pythonpath(workdir), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "caiconform.cli", *args],
        cwd=workdir,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_subprocesses_run_this_checkouts_caiconform(workdir):
    done = cli(workdir, "--help")
    assert done.returncode == 0
    probe = subprocess.run(
        [sys.executable, "-c", "import caiconform; print(caiconform.__file__)"],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": _pythonpath(workdir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert Path(probe.stdout.strip()).resolve() == CHECKOUT / "caiconform" / "__init__.py"


def check_json(workdir: Path, *args: str, stdin: str | None = None) -> tuple[int, dict]:
    result = cli(workdir, "check", "--json", *args, stdin=stdin)
    return result.returncode, json.loads(result.stdout)


def assert_usage_error(result: subprocess.CompletedProcess, text: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("caiconform: error: "), result.stderr
    assert text in lines[0]
    assert "Traceback" not in result.stderr and not result.stdout


# --- check: input forms --------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "cai_fixture_mod:array",
        "cai_fixture_mod:make",
        "cai_fixture_mod:Array",
        "cai_fixture_mod:ns.array",
    ],
)
def test_check_live_object_forms_pass_the_schema(workdir, target):
    code, out = check_json(workdir, target)
    (result,) = out["results"]
    assert result["target"] == "cai_fixture_mod.Array"
    schema = [f for f in result["findings"] if RULES[f["rule"]].dict_visible]
    assert schema == []
    if result["live_checks"]["ran"]:
        # on a GPU machine the made-up pointer is no device memory: only live rules may fail
        assert code == (0 if result["ok"] else 1)
    else:
        assert code == 0 and result["ok"] and result["findings"] == []
        assert result["live_checks"]["skipped"]


def test_check_module_dict_is_judged_as_the_interface_dict(workdir):
    code, out = check_json(workdir, "cai_fixture_mod:as_dict")
    assert code == 0 and out["results"][0]["target"] == "dict"
    assert "recorded dict" in out["results"][0]["live_checks"]["skipped"]


def test_check_broken_object_exits_1_and_names_the_rule(workdir):
    result = cli(workdir, "check", "cai_fixture_mod:broken")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "CAI-SHAPE-TUPLE" in result.stdout and "FAIL" in result.stdout
    assert "cai-v3#python-interface-specification" in result.stdout
    assert "live checks: " in result.stdout


def test_check_json_file_lists_stand_for_tuples(workdir):
    result = cli(workdir, "check", "valid.json")
    assert result.returncode == 0, result.stdout
    assert "OK" in result.stdout and "TUPLE" not in result.stdout
    assert "live checks: skipped - recorded dict" in result.stdout


def test_check_json_file_with_violation_exits_1(workdir):
    code, out = check_json(workdir, "broken.json")
    assert code == 1 and not out["ok"]
    assert [f["rule"] for f in out["results"][0]["findings"]] == ["CAI-STREAM-ZERO-FORBIDDEN"]


def test_check_json_lines_judges_each_line(workdir):
    code, out = check_json(workdir, "lines.jsonl")
    assert code == 1
    assert [r["label"] for r in out["results"]] == ["lines.jsonl:1", "lines.jsonl:3"]
    assert [r["ok"] for r in out["results"]] == [True, False]


def test_check_stdin(workdir):
    code, out = check_json(workdir, "-", stdin=json.dumps(VALID))
    assert code == 0 and out["results"][0]["label"] == "<stdin>"


def test_check_recorded_mask_is_an_object_exposing_the_interface(workdir):
    code, out = check_json(workdir, "masked.json")
    rules = {f["rule"] for f in out["results"][0]["findings"]}
    assert code == 0 and rules == {"CAI-PORT-MASK", "CAI-PORT-MASK-SHAPE-EXACT"}


def test_check_version_option_judges_as_that_version(workdir):
    code, out = check_json(workdir, "--version", "2", "valid.json")
    result = out["results"][0]
    assert result["version"] == 2
    assert "CAI-V2-STREAM-UNDEFINED" in {f["rule"] for f in result["findings"]}
    assert code == 0  # a SHOULD finding is a warning


def test_check_json_output_fields(workdir):
    _, out = check_json(workdir, "broken.json")
    result = out["results"][0]
    assert set(result) >= {"label", "target", "version", "ok", "findings", "live_checks"}
    finding = result["findings"][0]
    assert set(finding) == {
        *("rule", "level", "level_text", "path", "seen", "expected", "message", "section")
    }
    assert finding["message"].endswith("[CAI-STREAM-ZERO-FORBIDDEN]")
    assert finding["level_text"] == "MUST"  # "0: This is disallowed"


def test_console_script_runs(workdir):
    script = shutil.which("caiconform")
    if script is None:
        pytest.skip("the caiconform console script is not installed (pip install -e .)")
    result = subprocess.run(
        [script, "check", str(workdir / "valid.json")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "OK" in result.stdout


# --- check: usage errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, text",
    [
        (["no_such_module_xyz:obj"], "cannot import module 'no_such_module_xyz'"),
        (["cai_fixture_mod:nothing"], "no attribute 'nothing'"),
        (["cai_fixture_mod:ns.nothing"], "no attribute 'nothing'"),
        (["cai_raises_on_import:x"], "raised ValueError: bad import"),
        (["cai_fixture_mod:fails"], "calling cai_fixture_mod:fails() raised RuntimeError"),
        (["bad.json"], "bad.json: line 1: invalid JSON"),
        (["bad_line.jsonl"], "bad_line.jsonl: line 2: invalid JSON"),
        (["bad_pretty.json"], "bad_pretty.json: line 3: invalid JSON: Expecting value"),
        (["a_dir"], "a_dir is not a file"),
        (["missing.json"], "no such file: missing.json"),
        (["array.json"], "holds an array, expected an object"),
        (["null.json"], "holds null, expected an object"),
        (["empty.json"], "no JSON object"),
        (["deep.json"], "deep.json: JSON nested too deeply"),
        (["just-a-word"], "neither module:attr"),
        (["--version", "9", "valid.json"], "--version must be 0, 1, 2 or 3"),
    ],
)
def test_check_usage_errors_are_one_line_exit_2(workdir, args, text):
    assert_usage_error(cli(workdir, "check", *args), text)


@pytest.mark.parametrize(
    "args, text",
    [
        (["cai_exits_on_import:x"], "importing 'cai_exits_on_import' raised SystemExit: 0"),
        (["cai_fixture_mod:exits"], "raised SystemExit: 0"),
    ],
)
def test_check_a_target_that_ends_the_process_while_imported_or_called_exits_3(workdir, args, text):
    """Not a usage error: the target ended the process (`check --help`: exit 3), one line."""
    done = cli(workdir, "check", *args)
    assert done.returncode == 3, done.stderr + done.stdout
    said = (done.stderr + done.stdout).strip().splitlines()
    assert len(said) == 1 and text in said[0] and "Traceback" not in said[0]


def test_check_bad_stdin_is_a_usage_error(workdir):
    assert_usage_error(cli(workdir, "check", "-", stdin="{nope"), "<stdin>: line 1: invalid JSON")


def test_no_command_prints_help_and_exits_2(workdir):
    result = cli(workdir)
    assert result.returncode == 2 and "check" in result.stderr and "rules" in result.stderr


# --- rules ------------------------------------------------------------------------------------


def test_rules_json_lists_every_rule_with_its_fields(workdir):
    result = cli(workdir, "rules", "--json")
    assert result.returncode == 0
    rules = json.loads(result.stdout)
    assert [r["id"] for r in rules] == list(RULES)
    for r in rules:
        assert {"id", "level", "versions", "side", "section", "text"} <= set(r)


def test_rules_filters_combine(workdir):
    result = cli(
        workdir, "rules", "--json", "--level", "must", "--side", "producer", "--version", "0"
    )
    rules = json.loads(result.stdout)
    assert rules and all(
        r["level"] == "MUST" and r["side"] == "producer" and 0 in r["versions"] for r in rules
    )
    assert "CAI-STREAM-TYPE" not in {r["id"] for r in rules}


def test_rules_markdown_and_table(workdir):
    markdown = cli(workdir, "rules", "--markdown", "--level", "PORTABILITY").stdout
    lines = markdown.strip().splitlines()
    assert lines[0].startswith("| ID | Level |") and len(lines) == 2 + sum(
        r.level.value == "PORTABILITY" for r in RULES.values()
    )
    table = cli(workdir, "rules", "--side", "plugin").stdout
    assert "EMM-" in table and "CAI-" not in table


@pytest.mark.parametrize(
    "args, text",
    [
        (["--level", "MIGHT"], "--level must be one of"),
        (["--side", "gpu"], "--side must be"),
        (["--version", "x"], "--version must be"),
    ],
)
def test_rules_bad_filters_exit_2(workdir, args, text):
    assert_usage_error(cli(workdir, "rules", *args), text)


def test_check_does_not_import_heavy_libraries_for_a_json_file(workdir):
    code = textwrap.dedent(
        """
        import sys
        from caiconform.cli import main
        main(["check", "--json", "valid.json"])
        heavy = ("numpy", "hypothesis", "torch", "cupy", "numba", "jax", "cuda", "yaml")
        heavy = [m for m in heavy if m in sys.modules]
        sys.stderr.write(repr(heavy))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True, timeout=60
    )
    assert result.stderr == "[]", result.stderr


# --- the live-check hook (in process) ------------------------------------------------------


def _fake_live(monkeypatch, live_check) -> None:
    import types

    module = types.ModuleType("caiconform.reference.live")
    module.live_check = live_check
    monkeypatch.setitem(sys.modules, "caiconform.reference.live", module)


def test_live_checks_merge_the_live_checkers_findings(monkeypatch):
    from caiconform.commands.check import live_checks
    from caiconform.spec.findings import finding

    found = finding("CAI-DATA-DEVICE-ACCESSIBLE", "data[0]", "host memory", "device memory")
    _fake_live(monkeypatch, lambda obj: ([found], None))
    assert live_checks(object()) == ([found], None)


def test_live_checks_report_skips_and_failures_without_raising(monkeypatch):
    from caiconform.commands.check import live_checks

    _fake_live(monkeypatch, lambda obj: ([], "live checks skipped: no GPU"))
    assert live_checks(object()) == ([], "no GPU")

    def broken(obj):
        raise RuntimeError("driver gone")

    _fake_live(monkeypatch, broken)
    assert live_checks(object()) == ([], "live checker failed: RuntimeError: driver gone")


def test_live_checks_without_a_checker(monkeypatch):
    from caiconform.commands.check import live_checks

    monkeypatch.setitem(sys.modules, "caiconform.reference.live", None)  # import fails
    assert live_checks(object()) == ([], "no live checker installed")


def test_callable_returning_a_dict_is_judged_as_the_dict(workdir):
    (workdir / "cai_returns_dict.py").write_text(
        "def make():\n    return {'shape': (1,), 'typestr': '<f4', 'data': (256, False),"
        " 'version': 3}\n"
    )
    code, out = check_json(workdir, "cai_returns_dict:make")
    assert code == 0 and out["results"][0]["target"] == "dict"
    assert out["results"][0]["label"] == "cai_returns_dict:make()"


def test_one_usage_error_for_the_cli_and_the_runner():
    """The runner raises the class the CLI catches (one line, exit 2), none converted."""
    from caiconform import cli, errors
    from caiconform.runner import plan

    assert cli.UsageError is errors.UsageError
    with pytest.raises(errors.UsageError, match="unknown check 'nope'"):
        plan.load_families(["nope"])
