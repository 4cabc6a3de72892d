"""Planted single-point mutants of `caiconform check` (`caiconform.commands.check` and its
repeated reads, `_check_reads`) that the suite let live (issue 41,
tests/mutants/validator_check_plugin.toml): a capsule that changes only on the last call or
only in a tensor field, a callable object that itself exposes the CAI, an object exposing both
protocols through its instance, recorded JSON's long negative integers and descr shapes, and
the snapshots' added entries and floats.

Module targets are written to a temporary module and run through `caiconform.cli.main` as
`tests/test_edges_check.py` does; the DLPack verdict is also asked of `check._judge_dlpack`
directly, with `tests.test_dlpack`'s hand-built capsules. No GPU is needed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from caiconform.cli import main as cli_main
from caiconform.commands import check
from caiconform.commands._check_reads import difference, snapshot
from tests.test_dlpack import _NO_OP_ADDRESS, _Capsules

_TARGETS = """
import numpy as np

VALID = {"shape": (2, 3), "typestr": "<f4", "data": (140000000000000, False), "version": 3}
_arr = np.arange(4, dtype=np.float32)
_calls = {"n": 0}


class ThirdCallShrinks:
    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **kwargs):
        _calls["n"] += 1
        return _arr[: 3 if _calls["n"] < 3 else 2].__dlpack__(**kwargs)


class CallableExport:
    __cuda_array_interface__ = property(lambda self: dict(VALID))

    def __call__(self):
        raise RuntimeError("an object exposing the interface is judged, not called")


class BothOnTheInstance:
    def __init__(self):
        self.__cuda_array_interface__ = dict(VALID)

    def __dlpack__(self, **kwargs):
        raise BufferError("never asked: the object exposes the CUDA Array Interface")

    def __dlpack_device__(self):
        return (2, 0)


third_call_shrinks = ThirdCallShrinks()
callable_export = CallableExport()
both_on_the_instance = BothOnTheInstance()
"""


@pytest.fixture
def targets(tmp_path, monkeypatch):
    (tmp_path / "cai_mutants2_mod.py").write_text(_TARGETS)
    monkeypatch.syspath_prepend(str(tmp_path))


def _check(capsys, target: str) -> tuple[int, dict]:
    status = cli_main(["check", "--json", target])
    return status, json.loads(capsys.readouterr().out)


def test_a_capsule_changing_only_on_the_last_call_is_a_describes_data_finding(targets, capsys):
    """check calls `__dlpack__` READS (3) times: a capsule whose shape changes on the third
    call only is a finding, under DLPACK-PRODUCER-DESCRIBES-DATA (a field, not the capsule)."""
    status, payload = _check(capsys, "cai_mutants2_mod:third_call_shrinks")
    changed = [f for f in payload["results"][0]["findings"] if "changed between" in f["message"]]
    assert status == 1 and len(changed) == 1, f"expected one change finding, got {payload}"
    assert (changed[0]["rule"], changed[0]["path"]) == (
        "DLPACK-PRODUCER-DESCRIBES-DATA",
        "__dlpack__()['shape']",
    ), changed


class _Offsets:
    """A CUDA producer whose capsules share one buffer and move their byte_offset from the
    second call on."""

    def __init__(self) -> None:
        self.buffer = np.zeros(8, dtype="<f4")
        self.made: list[_Capsules] = []

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        offset = 0 if not self.made else 4
        made = _Capsules(
            self.buffer, (3,), (1,), 2, 32, True, byte_offset=offset, destructor=_NO_OP_ADDRESS
        )
        self.made.append(made)
        return made.capsule


def test_a_capsule_whose_byte_offset_changes_between_calls_is_a_finding():
    report, skipped = check._judge_dlpack(_Offsets(), None, lambda _phase: None)
    changed = [f for f in report.findings if "changed between" in f.message]
    assert [(f.rule, f.path) for f in changed] == [
        ("DLPACK-PRODUCER-DESCRIBES-DATA", "__dlpack__()['byte_offset']")
    ], f"expected the byte_offset change named, got {report.findings}"
    assert skipped == check.DLPACK_SKIP


def test_a_callable_object_exposing_the_interface_is_judged_not_called(targets, capsys):
    status, payload = _check(capsys, "cai_mutants2_mod:callable_export")
    (result,) = payload["results"]
    assert status == 0, f"expected the object itself judged OK, got {payload}"
    assert result["label"] == "cai_mutants2_mod:callable_export", "expected no call: no '()'"


def test_an_object_exposing_the_interface_on_its_instance_is_judged_as_cai(targets, capsys):
    """`__cuda_array_interface__` set on the instance counts as much as a class attribute:
    such an object is judged by its CAI even though its type has `__dlpack__`."""
    status, payload = _check(capsys, "cai_mutants2_mod:both_on_the_instance")
    (result,) = payload["results"]
    skipped = result["live_checks"]["skipped"] or ""
    assert status == 0 and not skipped.startswith("DLPack export"), (
        f"expected a CAI verdict, got {result}"
    )


def test_a_long_negative_json_integer_keeps_its_sign(tmp_path, capsys):
    """JSON integers beyond Python's one-conversion limit are read in chunks, sign included."""
    path = tmp_path / "negative.json"
    digits = "7" * 5001
    path.write_text(
        f'{{"shape": [2, -{digits}], "typestr": "<f4", "data": [0, false], "version": 3}}'
    )
    status, payload = _check(capsys, str(path))
    rules = [(f["rule"], f["path"]) for f in payload["results"][0]["findings"]]
    assert status == 1 and ("CAI-SHAPE-NONNEGATIVE", "shape[1]") in rules, (
        f"expected the negative extent found, got {rules}"
    )


def test_a_recorded_descr_field_s_subarray_shape_is_a_tuple(tmp_path, capsys):
    """JSON has no tuples: a descr field's third item, its subarray shape, stands for one."""
    recorded = {
        "shape": [2],
        "typestr": "|V8",
        "descr": [["pair", "<f4", [2]]],
        "data": [140000000000000, False],
        "version": 3,
    }
    path = tmp_path / "descr.json"
    path.write_text(json.dumps(recorded))
    status, payload = _check(capsys, str(path))
    rules = [f["rule"] for f in payload["results"][0]["findings"]]
    # a void typestr is legal but non-portable: that warning is all there is to say
    assert (status, rules) == (0, ["CAI-PORT-TYPESTR-KIND"]), f"expected no descr finding: {rules}"


def test_an_entry_added_on_a_later_read_is_named():
    first = snapshot({"shape": (2,), "typestr": "<f4"})
    later = snapshot({"shape": (2,), "typestr": "<f4", "mask": None})
    got = difference(first, later)
    assert got == ("['mask']", "<no such entry>", None), f"expected 'mask' named, got {got}"


def test_a_float_that_changes_between_reads_is_a_change():
    got = difference(snapshot({"shape": (2.5,)}), snapshot({"shape": (2.0,)}))
    assert got is not None and got[0] == "['shape']", f"expected shape named, got {got}"
