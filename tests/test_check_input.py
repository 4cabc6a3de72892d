"""`caiconform check` and `validate` on hostile input (issue 26, item 5): huge integers, an
extent that wraps past 2**64, SystemExit in a mask's property, a target that hangs, a JSON
Lines file whose first line is broken."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from caiconform.cli import main as cli_main
from caiconform.spec.validate import validate

ROOT = Path(__file__).resolve().parent.parent
HUGE = 10**5000  # 5,001 digits: past Python's default limit on converting digits to an int


def _rules(report) -> list[tuple[str, str]]:
    return [(f.rule, f.path) for f in report.findings]


def _dict(**entries):
    return {"shape": (100,), "typestr": "<f4", "data": (1024, False), "version": 3, **entries}


def test_a_huge_negative_extent_is_still_reported_as_negative():
    report = validate(_dict(shape=(2, -HUGE)))
    assert _rules(report) == [("CAI-SHAPE-NONNEGATIVE", "shape[1]")]
    assert report.findings[0].message.startswith("shape[1]: got an int of 16610 bits")


def test_a_huge_shape_with_the_wrong_number_of_strides_names_both():
    report = validate(_dict(shape=(HUGE,), strides=(4, 4)))
    assert _rules(report) == [
        ("CAI-STRIDES-NDIM", "strides"),
        ("CAI-PORT-EXTENT-OVERFLOW", "shape"),
    ]


def test_a_huge_negative_stride_is_shown_without_converting_it():
    report = validate(_dict(shape=(2, 3), strides=(-HUGE, 4)))
    assert ("CAI-PORT-NEGATIVE-STRIDES", "strides[0]") in _rules(report)
    assert "CAI-ATTR-DICT" not in {rule for rule, _ in _rules(report)}


WRAPS = ("CAI-DATA-POINTER-RANGE", "data[0]")


@pytest.mark.parametrize(
    ("ptr", "strides", "rules"),
    [
        (2**64 - 16, None, [WRAPS]),
        (2**64 - 16, (4,), [WRAPS]),
        (16, (-4,), [("CAI-PORT-NEGATIVE-STRIDES", "strides[0]"), WRAPS]),
    ],
    ids=["past-2**64", "past-2**64-strided", "below-0"],
)
def test_an_extent_that_wraps_the_address_space_is_a_finding(ptr, strides, rules):
    report = validate(_dict(data=(ptr, False), strides=strides))
    assert _rules(report) == rules
    assert report.findings[-1].level.value == "MUST"


def test_an_extent_that_ends_at_2_64_is_clean():
    assert validate(_dict(data=(2**64 - 400, False))).findings == []


class _ExitingMask:
    @property
    def __cuda_array_interface__(self):
        raise SystemExit(3)


def test_system_exit_in_a_mask_property_is_the_producers_failure():
    report = validate(_dict(mask=_ExitingMask()))
    assert _rules(report) == [("CAI-PORT-MASK", "mask"), ("CAI-MASK-TYPE", "mask")]
    assert "raised SystemExit" in report.findings[1].message


def test_check_judges_json_with_a_5001_digit_integer(tmp_path, capsys):
    target = tmp_path / "big.json"
    target.write_text(
        '{"shape": [2, -' + "9" * 5001 + '], "typestr": "<f4", "data": [1024, false], "version": 3}'
    )
    assert cli_main(["check", "--json", str(target)]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert [f["rule"] for f in payload["results"][0]["findings"]] == ["CAI-SHAPE-NONNEGATIVE"]


def test_a_jsonl_file_whose_first_line_is_broken_names_line_1(tmp_path, capsys):
    target = tmp_path / "bad.jsonl"
    good = json.dumps({"shape": [2], "typestr": "<f4", "data": [1024, False], "version": 3})
    target.write_text('{"shape": [2], "typestr"\n' + good + "\n")
    assert cli_main(["check", str(target)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"caiconform: error: {target}: line 1: invalid JSON: Expecting ':' delimiter"
    )


def test_a_broken_pretty_printed_json_names_the_line_of_its_error(tmp_path, capsys):
    target = tmp_path / "bad.json"
    target.write_text('{\n "shape": [2],\n "typestr" "<f4"\n}\n')
    assert cli_main(["check", str(target)]) == 2
    assert f"{target}: line 3: invalid JSON: Expecting ':' delimiter" in capsys.readouterr().err


_HANGS = """
import time


class Hangs:
    @property
    def __cuda_array_interface__(self):
        while True:
            time.sleep(0.05)


obj = Hangs()
"""


def test_check_gives_up_on_a_property_that_hangs(tmp_path):
    (tmp_path / "hangs_here.py").write_text(_HANGS)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "caiconform.cli", "check", "hangs_here:obj", "--timeout", "1"],
        cwd=tmp_path,
        env={"PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "caiconform: error: hangs_here:obj: no answer after 1 s (an import, call or property "
        "that hangs?); --timeout S waits longer"
    ]
    assert time.monotonic() - started < 30


def test_check_has_a_default_timeout():
    from caiconform.commands.check import DEFAULT_TIMEOUT_S

    assert DEFAULT_TIMEOUT_S == 10.0


@pytest.mark.parametrize("raw", ["-1", "nan", "inf", "soon"])
def test_a_bad_timeout_is_a_usage_error(raw, capsys):
    with pytest.raises(SystemExit) as exited:
        cli_main(["check", "x:y", "--timeout", raw])
    assert exited.value.code == 2
    assert "--timeout" in capsys.readouterr().err
