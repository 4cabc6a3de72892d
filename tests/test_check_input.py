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


def test_check_has_a_default_timeout(monkeypatch, capsys):
    """Without --timeout, a module:attr target is judged with the default limit (10 s), not
    without one; the help says so."""
    from caiconform.commands import check
    from caiconform.spec.validate import validate

    asked: list[float] = []

    def judged(spec, version, seconds):
        asked.append(seconds)
        return [(check.Target(spec, None, True), validate(_dict()), None)]

    monkeypatch.setattr(check, "judge_in_child", judged)
    assert cli_main(["check", "cai_any_module:obj"]) == 0
    assert asked == [10.0] == [check.DEFAULT_TIMEOUT_S], f"got {asked}, expected [10.0]"
    assert cli_main(["check", "cai_any_module:obj", "--timeout", "0"]) == 0
    assert asked[-1] == 0.0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli_main(["check", "--help"])
    assert "(default 10; 0: no limit)" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("raw", ["-1", "nan", "inf", "soon"])
def test_a_bad_timeout_is_a_usage_error(raw, capsys):
    with pytest.raises(SystemExit) as exited:
        cli_main(["check", "x:y", "--timeout", raw])
    assert exited.value.code == 2
    assert "--timeout" in capsys.readouterr().err


# --- a module:attr target runs in a child process: nothing it does ends caiconform's --------

_HOSTILE = """
import ctypes
import os


def _prop(body):
    return type("Hostile", (), {"__cuda_array_interface__": property(body)})()


def _exit0(self):
    raise SystemExit(0)


def _os_exit(self):
    os._exit(0)


def _segfault(self):
    ctypes.string_at(0)


def _generator_exit(self):
    raise GeneratorExit


def _interrupt(self):
    raise KeyboardInterrupt


exits = _prop(_exit0)
os_exits = _prop(_os_exit)
segfaults = _prop(_segfault)
generator_exit = _prop(_generator_exit)
interrupts = _prop(_interrupt)


def calls_os_exit():
    os._exit(0)


class _CallableExiting:
    __cuda_array_interface__ = property(_exit0)

    def __call__(self):
        return self


callable_exits = _CallableExiting()
"""


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    (tmp_path / "cai_hostile_mod.py").write_text(_HOSTILE)
    (tmp_path / "cai_os_exit_on_import.py").write_text("import os\nos._exit(0)\n")
    (tmp_path / "cai_interrupt_on_import.py").write_text("raise KeyboardInterrupt\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.fixture(params=[False, True], ids=["no-gpu", "gpu"])
def gpu_present(request, monkeypatch):
    """Either answer of `gpu_available()`, whatever this machine's is: where a GPU is present
    the live checks read the target's attribute a second time (the child process is forked,
    so it sees the patch)."""
    import caiconform.cuda

    answer = (True, "") if request.param else (False, "no GPU (faked by the test)")
    monkeypatch.setattr(caiconform.cuda, "gpu_available", lambda: answer)
    return request.param


@pytest.mark.parametrize(
    ("attr", "seen"),
    [
        ("exits", "SystemExit raised"),
        ("callable_exits", "SystemExit raised"),
        ("os_exits", "the process ended (exit status 0) while reading it"),
        ("segfaults", "the process ended (signal SIGSEGV) while reading it"),
        ("generator_exit", "GeneratorExit raised"),
        ("interrupts", "KeyboardInterrupt raised"),
    ],
)
def test_a_property_that_ends_or_breaks_the_process_is_a_finding(
    hostile, capsys, gpu_present, attr, seen
):
    assert cli_main(["check", "--json", f"cai_hostile_mod:{attr}"]) == 1
    payload = json.loads(capsys.readouterr().out)
    result = payload["results"][0]
    findings = result["findings"]
    dict_findings = [f for f in findings if f["rule"] == "CAI-ATTR-DICT"]
    assert dict_findings and dict_findings[0]["level"] == "MUST", findings
    assert any(f["seen"].startswith(seen) for f in findings), findings
    if gpu_present and attr not in ("os_exits", "segfaults"):
        # the live checks read the attribute again: the target's exception skips them
        skipped = result["live_checks"]["skipped"]
        assert skipped.startswith(f"the target raised {seen.split()[0]} "), skipped


@pytest.mark.parametrize(
    ("target", "line"),
    [
        (
            "cai_os_exit_on_import:obj",
            "cai_os_exit_on_import:obj: the process ended (exit status 0) while importing or "
            "calling it: no verdict",
        ),
        (
            "cai_hostile_mod:calls_os_exit",
            "cai_hostile_mod:calls_os_exit: the process ended (exit status 0) while importing "
            "or calling it: no verdict",
        ),
    ],
)
def test_an_import_or_call_that_ends_the_process_is_one_line_and_exit_3(
    hostile, capsys, target, line
):
    assert cli_main(["check", target]) == 3
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [f"caiconform: error: {line}"]
    assert captured.out == ""


def test_an_import_raising_keyboard_interrupt_ends_the_target_not_check(hostile, capsys):
    assert cli_main(["check", "cai_interrupt_on_import:obj"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "caiconform: error: cai_interrupt_on_import:obj: importing 'cai_interrupt_on_import' "
        "raised KeyboardInterrupt: no verdict"
    ]


def test_what_a_target_prints_does_not_break_json_output(tmp_path):
    """The target is imported in a forked child whose prints reach the real standard output
    (capsys cannot see them), so check runs as its own process here."""
    (tmp_path / "cai_noisy_mod.py").write_text(
        "import sys\n"
        "print('noise')\n"
        "sys.stdout.write('more noise\\n')\n"
        "obj = {'shape': (2,), 'typestr': '<f4', 'data': (1024, False), 'version': 3}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "caiconform.cli", "check", "--json", "cai_noisy_mod:obj"],
        cwd=tmp_path,
        env={"PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True, f"got stdout {done.stdout[:200]!r}"
    assert "noise" not in done.stdout
    # where the prints went is the child's business: on stderr when it flushed before exiting
    assert set(done.stderr.splitlines()[:2]) <= {"noise", "more noise"}


class _Raises:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    @property
    def __cuda_array_interface__(self):
        raise self.exc


@pytest.mark.parametrize("exc", [GeneratorExit(), KeyboardInterrupt(), SystemExit(0)])
def test_validate_turns_any_exception_of_a_property_into_a_finding(exc):
    report = validate(_Raises(exc))
    assert not report.ok
    assert f"{type(exc).__name__} raised" in report.findings[0].seen


@pytest.mark.parametrize("exc", [GeneratorExit(), KeyboardInterrupt()])
def test_validate_turns_any_exception_of_a_mask_property_into_a_finding(exc):
    report = validate(_dict(mask=_Raises(exc)))
    assert ("CAI-MASK-TYPE", "mask") in _rules(report)


class _Interrupted:
    @property
    def __cuda_array_interface__(self):
        import signal

        signal.raise_signal(signal.SIGINT)  # as the user's Ctrl-C arrives
        return {}


def test_validate_lets_the_users_ctrl_c_through():
    """Under Python's own SIGINT handler (another test in the same xdist worker may have left
    its own installed), the user's Ctrl-C leaves `validate` as KeyboardInterrupt."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            validate(_Interrupted())
    finally:
        signal.signal(signal.SIGINT, previous)


#: characters a finding's message may take, whatever it quotes
_MESSAGE_CAP = 400


@pytest.mark.parametrize(
    "entries",
    [
        {"shape": (HUGE,)},
        {"shape": (2, 3), "strides": (HUGE, 4)},
        {"shape": (HUGE, HUGE)},
        {"data": (HUGE, False)},
        {"stream": HUGE},
        {"version": HUGE},
        {"typestr": "<f" + "4" * 5000},
    ],
    ids=["shape", "strides", "shape2", "data", "stream", "version", "typestr"],
)
def test_a_finding_quotes_no_huge_value_whole(entries):
    report = validate(_dict(**entries))
    assert report.findings, entries
    longest = max(len(f.message) for f in report.findings)
    assert longest <= _MESSAGE_CAP, [f.message for f in report.findings]


def test_check_of_a_5001_digit_shape_prints_a_short_finding(tmp_path, capsys):
    target = tmp_path / "big.json"
    target.write_text(
        '{"shape": [' + "9" * 5001 + '], "typestr": "<f4", "data": [1, false], "version": 3}'
    )
    assert cli_main(["check", "--json", str(target)]) == 1
    findings = json.loads(capsys.readouterr().out)["results"][0]["findings"]
    assert "CAI-DATA-POINTER-RANGE" in {f["rule"] for f in findings}
    assert max(len(f["message"]) for f in findings) <= _MESSAGE_CAP, findings
