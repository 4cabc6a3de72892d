"""`caiconform check`'s edges (issue 41): an export read more than once and changed between
reads is a finding; what ends a process in `__dlpack__` or `__dlpack_device__` is a DLPack
finding; one exit status per kind of event for the CAI property, `__dlpack__`,
`__dlpack_device__` and a callable alike; `rules --coverage` refuses a corrupt journal."""

from __future__ import annotations

import json

import pytest

from caiconform.cli import main as cli_main

_TARGETS = """
import ctypes
import os
import sys

import numpy as np

VALID = {"shape": (2, 3), "typestr": "<f4", "data": (140000000000000, False), "version": 3}


class MyBase(BaseException):
    pass


def _sysexit():
    sys.exit(0)


def _osexit():
    os._exit(0)


def _kbint():
    raise KeyboardInterrupt


def _base():
    raise MyBase("custom")


def _segv():
    ctypes.string_at(0)


def _cai(fn):
    return type("T", (), {"__cuda_array_interface__": property(lambda self: fn())})()


def _dl(fn, dev=lambda: (1, 0)):
    return type(
        "D", (), {"__dlpack__": lambda self, *a, **k: fn(), "__dlpack_device__": lambda self: dev()}
    )()


_arr = np.arange(3, dtype=np.float32)
_numpy = lambda: _arr.__dlpack__()  # noqa: E731
_reads = {"cai": 0, "shape": 0, "dl": 0}


def _alt_valid_first():
    _reads["cai"] += 1
    if _reads["cai"] == 1:
        return dict(VALID)
    return {"shape": (2,), "typestr": "<f4", "data": (0, False), "version": 3}


def _alt_shape():
    _reads["shape"] += 1
    return dict(VALID, shape=(2, 3 + _reads["shape"]))


def _dl_alt():
    _reads["dl"] += 1
    return _arr.__dlpack__() if _reads["dl"] == 1 else None


cai_valid = _cai(lambda: dict(VALID))
cai_alt_valid_first = _cai(_alt_valid_first)
cai_alt_shape = _cai(_alt_shape)
dl_numpy = _dl(_numpy)
dl_alt = _dl(_dl_alt)
"""
_KINDS = {"sysexit": "SystemExit", "kbint": "KeyboardInterrupt", "base": "MyBase"}
_KINDS_ENDED = {"osexit": "exit status 0", "segv": "signal SIGSEGV"}
for _kind in [*_KINDS, *_KINDS_ENDED]:
    _TARGETS += (
        f"cai_{_kind} = _cai(_{_kind})\n"
        f"dl_{_kind} = _dl(_{_kind})\n"
        f"dl_dev_{_kind} = _dl(_numpy, dev=_{_kind})\n"
        f"call_{_kind} = _{_kind}\n"
    )


@pytest.fixture
def targets(tmp_path, monkeypatch):
    pytest.importorskip("numpy")
    (tmp_path / "cai_edges_mod.py").write_text(_TARGETS)
    monkeypatch.syspath_prepend(str(tmp_path))


def _check(capsys, name: str) -> tuple[int, dict | None, str]:
    status = cli_main(["check", "--json", f"cai_edges_mod:{name}"])
    captured = capsys.readouterr()
    return status, (json.loads(captured.out) if captured.out else None), captured.err


def test_a_valid_export_read_three_times_is_ok(targets, capsys):
    status, payload, _ = _check(capsys, "cai_valid")
    assert status == 0, payload
    status, payload, _ = _check(capsys, "dl_numpy")
    assert status == 0, payload


@pytest.mark.parametrize(
    ("name", "rule", "path"),
    [
        ("cai_alt_valid_first", "CAI-ATTR-DICT", "__cuda_array_interface__['shape']"),
        ("cai_alt_shape", "CAI-ATTR-DICT", "__cuda_array_interface__['shape']"),
        ("dl_alt", "DLPACK-CAPSULE-NAME", "__dlpack__()['capsule']"),
    ],
)
def test_an_export_that_changes_between_reads_is_one_finding_naming_what_changed(
    targets, capsys, name, rule, path
):
    status, payload, _ = _check(capsys, name)
    assert status == 1
    changed = [f for f in payload["results"][0]["findings"] if "changed between" in f["message"]]
    assert len(changed) == 1, payload
    assert (changed[0]["rule"], changed[0]["path"], changed[0]["level"]) == (rule, path, "MUST")
    assert "\n" not in changed[0]["message"]


@pytest.mark.parametrize("kind", [*_KINDS, *_KINDS_ENDED])
@pytest.mark.parametrize(
    ("prefix", "rule", "path"),
    [
        ("cai", "CAI-ATTR-DICT", ""),
        ("dl", "DLPACK-CAPSULE-NAME", "__dlpack__()"),
        ("dl_dev", "DLPACK-DEVICE-TUPLE", "__dlpack_device__()"),
    ],
)
def test_an_export_that_ends_the_process_is_that_protocols_finding_exit_1(
    targets, capsys, kind, prefix, rule, path
):
    status, payload, err = _check(capsys, f"{prefix}_{kind}")
    assert status == 1, err
    findings = payload["results"][0]["findings"]
    named = [f for f in findings if f["rule"] == rule and f["level"] == "MUST"]
    assert named and named[0]["path"] == path, findings
    seen = _KINDS.get(kind) or f"the process ended ({_KINDS_ENDED[kind]})"
    assert named[0]["seen"].startswith(seen), named
    skipped = payload["results"][0]["live_checks"]["skipped"] or ""
    assert skipped.startswith("DLPack export") == prefix.startswith("dl"), skipped


@pytest.mark.parametrize("kind", [*_KINDS, *_KINDS_ENDED])
def test_a_callable_that_ends_the_process_is_one_line_and_exit_3(targets, capsys, kind):
    status, payload, err = _check(capsys, f"call_{kind}")
    assert status == 3
    assert payload is None
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(": no verdict"), lines
    assert (_KINDS.get(kind) or _KINDS_ENDED[kind]) in lines[0]


def test_check_help_and_readme_say_the_same_exit_statuses():
    from pathlib import Path

    from caiconform.commands import check

    readme = Path(__file__).resolve().parents[1].joinpath("README.md").read_text()
    squashed = " ".join(check.__doc__.split())
    assert "3 the target ended its process while being imported or called" in squashed
    assert "__dlpack_device__" in squashed and "GeneratorExit" in squashed
    # the README gives the four statuses and leaves the rest to the help
    squashed = " ".join(readme.split())
    assert (
        "Exit status: 0 without a MUST violation, 1 with one, 2 for a usage error, 3 when the "
        "target ended its process (`caiconform check --help` says more)"
    ) in squashed


def test_rules_coverage_refuses_a_corrupt_journal(tmp_path, capsys):
    journal = tmp_path / "results.jsonl"
    journal.write_text('{"check": "x", "outcome": "pass"}\nnot json\n')
    assert cli_main(["rules", "--coverage", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{journal}:2:" in err[0], err


def test_readme_installs_nox_through_the_dev_extra():
    from pathlib import Path

    import tomllib

    root = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(r.startswith("nox") for r in extras["dev"])
    readme = (root / "README.md").read_text()
    assert 'pip install ".[dev]"' in readme
