"""The dlpack_capi standalone reproducers without a GPU: the script of a group, run in a fresh
interpreter with caiconform blocked, over the stand-in driver and torch of
tests/test_standalone_dlpack.py, whose `Tensor` type here carries a C exchange API table built
with ctypes. The conforming table prints OK; a table whose tensor holds other values, or whose
work-stream entry is NULL, prints BUG under the group's rule, and another rule's break prints
OK saying it is not the group's."""

from __future__ import annotations

from pathlib import Path

import pytest

from caiconform.report.standalone import script_for_group
from caiconform.report.standalone._text import source_of
from tests.test_standalone import FAKE_DRIVER, group
from tests.test_standalone_dlpack import DLPACK_NAMES, FAKE_TORCH, run, verdict_of

#: the stand-in torch's table: its Tensor's own __dlpack__ taken over, as a C producer's table
#: would hand the tensor out; FAKE_TORCH_BUG "capi-values" makes it a copy plus one, "capi-null"
#: leaves current_work_stream NULL
FAKE_TABLE = """
_new = capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
_ptr = capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)


def _from_object(py_object, out):
    obj = ctypes.cast(py_object, ctypes.py_object).value
    if BUG == "capi-values":
        obj = Tensor(obj.array + 1)
        _KEEP.append(obj)
    capsule = obj.__dlpack__(max_version=(1, 3))
    out[0] = _ptr(capsule, b"dltensor_versioned")
    _set_name(capsule, b"used_dltensor_versioned")
    return 0


def _to_object(tensor, out):
    fields = read_managed(tensor)
    made = Tensor(capsule_values(fields, np.dtype("<f4")))
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(made))
    out[0] = id(made)
    return 0


def _allocator(prototype, out, ctx, set_error):
    out[0] = None
    set_error(ctx, b"NotImplementedError", b"no allocation here")
    return -1


_FN_OBJ = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_FN_ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                             ctypes.c_void_p, ctypes.CFUNCTYPE(None, ctypes.c_void_p,
                                                               ctypes.c_char_p, ctypes.c_char_p))
_FN_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32,
                              ctypes.POINTER(ctypes.c_void_p))
_CALLBACKS = (_FN_ALLOC(_allocator), _FN_OBJ(_from_object), _FN_OBJ(_to_object),
              _FN_STREAM(lambda kind, ident, out: 0))
_TABLE = (ctypes.c_void_p * 7)()
_TABLE[0] = 1 | (3 << 32)  # version 1.3
_TABLE[2], _TABLE[3], _TABLE[4] = (ctypes.cast(f, ctypes.c_void_p).value for f in _CALLBACKS[:3])
_TABLE[6] = None if BUG == "capi-null" else ctypes.cast(_CALLBACKS[3], ctypes.c_void_p).value
_NAME = b"dlpack_exchange_api"  # a capsule keeps a pointer to its name: held for good
Tensor.__dlpack_c_exchange_api__ = _new(ctypes.addressof(_TABLE), _NAME, None)
"""


@pytest.fixture(scope="module")
def table_stand_ins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("capi-fakes")
    (root / "cuda" / "bindings").mkdir(parents=True)
    (root / "cuda" / "__init__.py").write_text("")
    (root / "cuda" / "bindings" / "__init__.py").write_text("")
    (root / "cuda" / "bindings" / "driver.py").write_text(FAKE_DRIVER)
    helpers = source_of(*DLPACK_NAMES, "read_managed", given=("read_at",))
    (root / "torch.py").write_text(helpers + "\n\n" + FAKE_TORCH + "\n\n" + FAKE_TABLE)
    return root


def _group(rule: str) -> dict:
    params = {
        "scenario": "none",
        "typestr": "<f4",
        "layout": {"shape": [2, 3], "strides": None, "offset": 0, "pad": 0, "kind": "C"},
        "seed": 0,
    }
    return group("dlpack_capi/torch/-", params, rule=rule, role="producer", library="torch")


@pytest.mark.parametrize(
    "rule",
    ["DLPACK-CAPI-SAME-TENSOR", "DLPACK-CAPI-TO-PY-OBJECT", "DLPACK-CAPI-ALLOCATOR-SETERROR"],
)
def test_a_conforming_table_prints_ok(table_stand_ins: Path, tmp_path: Path, rule: str) -> None:
    text = script_for_group(_group(rule))
    assert text is not None and "exchange_api(obj)" in text
    assert ("ALLOCATOR(" in text) == (rule == "DLPACK-CAPI-ALLOCATOR-SETERROR")
    rc, line = verdict_of(run(text, table_stand_ins, tmp_path))
    assert (rc, line.split(":")[0]) == (0, "OK"), (line, text[-3000:])


def test_a_tensor_of_other_values_prints_bug(table_stand_ins: Path, tmp_path: Path) -> None:
    text = script_for_group(_group("DLPACK-CAPI-SAME-TENSOR"))
    rc, line = verdict_of(run(text, table_stand_ins, tmp_path, bug="capi-values"))
    assert rc == 1 and line.startswith("BUG:") and "DLPACK-CAPI-SAME-TENSOR" in line, line


def test_a_null_entry_is_the_bug_of_its_group_only(table_stand_ins: Path, tmp_path: Path) -> None:
    text = script_for_group(_group("DLPACK-CAPI-ENTRY-NON-NULL"))
    rc, line = verdict_of(run(text, table_stand_ins, tmp_path, bug="capi-null"))
    assert rc == 1 and "NULL current_work_stream" in line, line
    other = script_for_group(_group("DLPACK-CAPI-SAME-TENSOR"))
    rc, line = verdict_of(run(other, table_stand_ins, tmp_path, bug="capi-null"))
    assert rc == 0 and "not this group's" in line, line


def test_pending_scenarios_and_the_reference_get_no_script() -> None:
    pending = _group("DLPACK-CAPI-WORK-STREAM")
    pending["reproducer"]["params"]["scenario"] = "nonblocking"
    assert script_for_group(pending) is None
    reference = group(
        "dlpack_capi/reference/-",
        _group("X")["reproducer"]["params"],
        rule="DLPACK-CAPI-SAME-TENSOR",
        role="producer",
        library="reference",
    )
    assert script_for_group(reference) is None
