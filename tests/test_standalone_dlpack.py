"""The DLPack standalone reproducers (`caiconform.report.standalone.dlpack_*`) without a GPU.

The capsule builder and reader the scripts carry (`_dlpack_helpers`) run here on host memory:
a capsule built over a numpy array is what `numpy.from_dlpack` takes (renamed "used_...", the
deleter counted once when numpy's array is freed), and numpy's own capsule reads back its
layout and values. Whole scripts run in a fresh interpreter with caiconform blocked, over the
stand-in driver of tests/test_standalone.py (host memory as "device" memory) and a stand-in
`torch` whose DLPack import and export misbehave as `FAKE_TORCH_BUG` says: an import that
leaves the capsule unrenamed, one that takes a bad capsule's ownership and never calls its
deleter, one that dies on a consumed capsule, a copy without IS_COPIED, a capsule with wrong
strides, a from_dlpack(copy=True) that does not pass `copy` on (a view where a copy was
promised), an import that calls the deleter before it reads. Each prints BUG under the
group's rule; the conforming stand-in prints OK, and a refusal whose exception holds the
capsule (released once the exception is dropped) is not taken for a deleter never called.
"""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from caiconform.report.standalone import script_for_group
from caiconform.report.standalone._text import source_of
from tests.test_standalone import BOOT, FAKE_DRIVER, check_script, group, last_line

#: what the scripts' capsule builder and reader define, as the stand-ins use them
DLPACK_NAMES = ("make_capsule", "CapsuleProducer", "read_capsule", "capsule_values", "_FN")


def builder() -> dict:
    """The scripts' capsule builder and reader, run in a namespace of their own (the reader's
    device path needs the driver; host capsules never take it)."""
    space: dict = {"np": np, "read_at": None}
    exec(source_of(*DLPACK_NAMES, given=("read_at",)), space)
    return space


def test_the_builder_makes_a_capsule_numpy_imports_and_releases_once() -> None:
    b = builder()
    values = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # strides (16, 8) bytes

    def make(kwargs: dict):
        version = (1, 1) if kwargs.get("max_version") else None
        return b["make_capsule"](
            values.ctypes.data, values.shape, (2, 32, 1), (1, 0), strides=(4, 2), version=version
        )

    producer = b["CapsuleProducer"](make, (1, 0), keep=True)
    imported = np.from_dlpack(producer)
    assert np.array_equal(imported, values)
    assert [b["capsule_name"](c) for c in producer.capsules] == [b"used_dltensor_versioned"]
    (address,) = producer.tensors
    assert producer.calls[0][1].get("max_version") is not None  # numpy asked for a versioned one
    producer.capsules.clear()
    gc.collect()
    assert b["DELETER_CALLS"][address] == 0  # numpy's array still holds the tensor
    del imported
    gc.collect()
    assert b["DELETER_CALLS"][address] == 1


def test_an_unconsumed_capsule_is_released_by_its_destructor_and_a_used_one_is_not() -> None:
    b = builder()
    values = np.zeros(4, np.float32)
    capsule, address = b["make_capsule"](values.ctypes.data, (4,), (2, 32, 1), (1, 0))
    assert b["read_capsule"](capsule)["shape"] == (4,)
    del capsule
    gc.collect()
    assert b["DELETER_CALLS"][address] == 1
    used, other = b["make_capsule"](
        values.ctypes.data, (4,), (2, 32, 1), (1, 0), name=b"used_dltensor_versioned"
    )
    del used
    gc.collect()
    assert b["DELETER_CALLS"][other] == 0


def test_the_reader_reads_numpy_capsules_layout_and_values() -> None:
    b = builder()
    values = np.arange(24, dtype=np.int16).reshape(4, 6)[::-1, 1::2]
    fields = b["read_capsule"](values.__dlpack__(max_version=(1, 0)))
    assert fields["name"] == "dltensor_versioned" and fields["device"] == (1, 0)
    assert fields["shape"] == (4, 3) and fields["dtype"] == (0, 16, 1)
    assert b["byte_strides"](fields, 2) == values.strides
    assert np.array_equal(b["capsule_values"](fields, values.dtype), values)
    legacy = b["read_capsule"](values.__dlpack__())
    assert legacy["name"] == "dltensor" and legacy["version"] is None and legacy["flags"] is None


#: a stand-in torch: an array over host memory whose "device" is CUDA (the stand-in driver
#: reads host memory), its DLPack export built and its import read with the scripts' own
#: helpers; FAKE_TORCH_BUG picks a defect
FAKE_TORCH = """
import os
import sys

import numpy as np

BUG = os.environ.get("FAKE_TORCH_BUG", "")
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_KEEP = []


class Tensor:
    def __init__(self, array):
        self.array = np.ascontiguousarray(array)

    @property
    def __cuda_array_interface__(self):
        a = self.array
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                "version": 3, "strides": None}

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if stream == 2:
            raise BufferError("per-thread default stream is not supported.")
        src = self.array.copy() if copy else self.array
        _KEEP.append(src)
        flags = 2 if copy and BUG != "no-copied-flag" else 0
        steps = tuple(s // src.itemsize for s in src.strides)
        if BUG == "wrong-strides":
            steps = steps[::-1]
        version = (1, 1) if max_version is not None and max_version[0] >= 1 else None
        if BUG == "null-strides-1.3" and version:
            steps, version = None, (1, 3)
        code = (_CODES[src.dtype.kind], src.itemsize * 8, 1)
        return make_capsule(src.ctypes.data, src.shape, code, (2, 0), strides=steps,
                            version=version, flags=flags)[0]

    def data_ptr(self):
        return self.array.ctypes.data

    def cpu(self):
        return self

    def numpy(self):
        return self.array.copy()


class Imported(Tensor):  # an import: a view of the capsule's memory, read when asked; calls
    # the tensor's deleter when freed
    def __init__(self, array, address, struct, fields=None, dtype=None):
        self.array, self.address, self.struct = array, address, struct
        self.fields, self.dtype = fields, dtype

    def numpy(self):
        return capsule_values(self.fields, self.dtype) if self.fields else self.array.copy()

    def __del__(self):
        deleter = self.struct.from_address(self.address).deleter
        if deleter:
            _FN(deleter)(self.address)


def as_tensor(values, device=None):
    return Tensor(values)


_set_name = capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_USED = {b"dltensor_versioned": b"used_dltensor_versioned", b"dltensor": b"used_dltensor"}


def from_dlpack(obj, *, device=None, copy=None):
    asked = {"max_version": (1, 0)}
    if copy is not None and BUG != "ignore-copy":  # passed on: the producer makes the copy
        asked["copy"] = copy
    if device is not None:
        asked["dl_device"] = (2, int(str(device).split(":")[1]))
    capsule = obj.__dlpack__(**asked)
    name = capsule_name(capsule)
    if BUG == "segv-on-used" and name.startswith(b"used_"):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    if BUG == "rename-then-raise" and name in _USED:  # owns the tensor, never releases it
        _set_name(capsule, _USED[name])
        raise ValueError("refused after taking ownership")
    fields = read_capsule(capsule)  # raises on a bad capsule: its destructor releases it
    address = _pointer_in(capsule, name)
    if BUG != "no-rename":
        _set_name(capsule, _USED[name])
    if BUG == "release-first":  # calls the deleter, then reads the memory it gave back
        _FN(STRUCTS[name].from_address(address).deleter)(address)
        dtype = np.dtype(f"{'<' if fields['dtype'][1] > 8 else '|'}{'iufXXcb'[fields['dtype'][0]]}"
                         f"{fields['dtype'][1] // 8}")
        return Tensor(capsule_values(fields, dtype))
    dtype = np.dtype(f"{'<' if fields['dtype'][1] > 8 else '|'}{'iufXXcb'[fields['dtype'][0]]}"
                     f"{fields['dtype'][1] // 8}")
    values = capsule_values(fields, dtype)
    if BUG == "no-rename":
        return Tensor(values)
    return Imported(values, address, STRUCTS[name], fields, dtype)


def read_at(ptr, shape, dtype, steps, stream=None):
    n = max(0, sum((e - 1) * s for e, s in zip(shape, steps))) + dtype.itemsize
    raw = np.frombuffer((ctypes.c_char * n).from_address(ptr), np.uint8)
    return np.ndarray(shape, dtype, buffer=raw, strides=steps).copy()
"""


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the stand-in cuda.bindings.driver and torch."""
    root = tmp_path_factory.mktemp("dlpack-fakes")
    (root / "cuda" / "bindings").mkdir(parents=True)
    (root / "cuda" / "__init__.py").write_text("")
    (root / "cuda" / "bindings" / "__init__.py").write_text("")
    (root / "cuda" / "bindings" / "driver.py").write_text(FAKE_DRIVER)
    helpers = source_of(*DLPACK_NAMES, given=("read_at",))
    (root / "torch.py").write_text(helpers + "\n\n" + FAKE_TORCH)
    return root


def run(text: str, root: Path, tmp_path: Path, bug: str = "") -> subprocess.CompletedProcess:
    check_script(text)
    script = tmp_path / "repro.py"
    script.write_text(text)
    env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "FAKE_TORCH_BUG": bug}
    return subprocess.run(
        [sys.executable, "-c", BOOT, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def verdict_of(proc: subprocess.CompletedProcess) -> tuple[int, str]:
    return proc.returncode, last_line(proc)


LIFETIME = group(
    "dlpack_lifetime/reference/torch",
    {"typestr": "<f8", "shape": [2, 3], "seed": 0},
    rule="DLPACK-CONSUMER-RENAME",
    severity="refuses-valid",
)


def test_lifetime_an_import_leaving_the_capsule_unrenamed_prints_bug(
    stand_ins: Path, tmp_path: Path
) -> None:
    text = script_for_group(LIFETIME)
    code, line = verdict_of(run(text, stand_ins, tmp_path))
    assert code == 0 and line.startswith("OK: torch"), line
    code, line = verdict_of(run(text, stand_ins, tmp_path, "no-rename"))
    assert code == 1 and "still named 'dltensor_versioned'" in line, line
    assert "[DLPACK-CONSUMER-RENAME]" in line


def test_lifetime_deleter_counted_once_after_the_import_is_dropped(
    stand_ins: Path, tmp_path: Path
) -> None:
    g = {**LIFETIME, "rule": "DLPACK-CONSUMER-CALLS-DELETER"}
    proc = run(script_for_group(g), stand_ins, tmp_path)
    assert verdict_of(proc)[0] == 0, proc.stdout + proc.stderr
    assert "deleter calls with the import dropped too: [1]" in proc.stdout


ADVERSARIAL = group(
    "dlpack_adversarial/-/torch",
    {"kind": "ndim-huge"},
    rule="DLPACK-CONSUMER-CALLS-DELETER",
    severity="refuses-valid",
)


def test_adversarial_a_refusal_released_by_the_capsules_destructor_is_ok(
    stand_ins: Path, tmp_path: Path
) -> None:
    proc = run(script_for_group(ADVERSARIAL), stand_ins, tmp_path)
    code, line = verdict_of(proc)
    assert code == 0 and "no DLPACK-CONSUMER-CALLS-DELETER finding" in line, proc.stdout
    # while the exception lives, its traceback holds the capsule: no call yet
    assert "deleter calls while the exception (and its traceback) is alive: [0]" in proc.stdout
    assert "deleter calls once the exception is dropped and garbage collected: [1]" in proc.stdout


def test_adversarial_a_refused_capsule_owned_and_never_released_prints_bug(
    stand_ins: Path, tmp_path: Path
) -> None:
    proc = run(script_for_group(ADVERSARIAL), stand_ins, tmp_path, "rename-then-raise")
    code, line = verdict_of(proc)
    assert code == 1 and "the deleter of a refused capsule never called (1 of 1)" in line, line


def test_adversarial_null_deleter_read_right_is_ok(stand_ins: Path, tmp_path: Path) -> None:
    g = group(
        "dlpack_adversarial/-/torch",
        {"kind": "null-deleter"},
        rule="DLPACK-DELETER-NULL",
        outcome="rejected-valid",
    )
    code, line = verdict_of(run(script_for_group(g), stand_ins, tmp_path))
    assert code == 0 and "no DLPACK-DELETER-NULL finding" in line, line


def test_copy_true_without_is_copied_prints_bug(stand_ins: Path, tmp_path: Path) -> None:
    g = group(
        "dlpack_copy/torch/-",
        {"case": "copy-true", "typestr": "|u1", "shape": [2], "seed": 0},
        role="producer",
        library="torch",
        rule="DLPACK-COPY-FLAG",
    )
    text = script_for_group(g)
    code, line = verdict_of(run(text, stand_ins, tmp_path))
    assert code == 0 and "no DLPACK-COPY-FLAG finding" in line, line
    code, line = verdict_of(run(text, stand_ins, tmp_path, "no-copied-flag"))
    assert code == 1 and "IS_COPIED unset on a copy" in line and "[DLPACK-COPY-FLAG]" in line


def test_a_producer_capsule_with_wrong_strides_prints_bug(stand_ins: Path, tmp_path: Path) -> None:
    g = group(
        "dlpack_versions/torch/-",
        {"max_version": [1, 0], "typestr": "<i4", "layout": {"shape": [3, 4]}, "seed": 0},
        role="producer",
        library="torch",
        rule="DLPACK-STRIDES-ELEMENTS",
    )
    text = script_for_group(g)
    code, line = verdict_of(run(text, stand_ins, tmp_path))
    assert code == 0 and line.startswith("OK: torch's capsule describes the array"), line
    code, line = verdict_of(run(text, stand_ins, tmp_path, "wrong-strides"))
    assert code == 1 and "the capsule's strides are (1, 4) elements" in line, line


def test_a_1_3_capsule_with_null_strides_prints_bug(stand_ins: Path, tmp_path: Path) -> None:
    g = group(
        "dlpack_versions/torch/-",
        {"max_version": [1, 3], "typestr": "<i4", "layout": {"shape": [3, 4]}, "seed": 0},
        role="producer",
        library="torch",
        rule="DLPACK-STRIDES-NONNULL",
    )
    text = script_for_group(g)
    code, line = verdict_of(run(text, stand_ins, tmp_path))
    assert code == 0 and line.startswith("OK: torch's capsule describes the array"), line
    code, line = verdict_of(run(text, stand_ins, tmp_path, "null-strides-1.3"))
    assert code == 1 and "DLPack 1.3 capsule of ndim 2 with NULL strides" in line, line
    assert "[DLPACK-STRIDES-NONNULL]" in line


def test_a_consumer_refusing_a_valid_capsule_prints_bug_naming_where(
    stand_ins: Path, tmp_path: Path
) -> None:
    g = group(
        "dlpack_roundtrip/reference/torch",
        {"typestr": "<i2", "layout": {"shape": [3], "strides": [6], "offset": 4}, "seed": 0},
        rule="DLPACK-CONSUMER-READS-DESCRIBED",
        outcome="rejected-valid",
    )
    text = script_for_group(g)
    code, line = verdict_of(run(text, stand_ins, tmp_path))
    assert code == 0 and line.startswith("OK: torch read the values the capsule describes"), line
    broken = text.replace("def read(obj):", "def read(obj):\n    raise TypeError('refused')", 1)
    code, line = verdict_of(run(broken, stand_ins, tmp_path))
    assert code == 1 and "TypeError: refused (raised at" in line, line


def test_a_stream_value_refused_is_the_bug_of_its_group(stand_ins: Path, tmp_path: Path) -> None:
    g = group(
        "dlpack_streams/torch/-",
        {"stream": 2, "scenario": "none", "typestr": "<f8", "shape": [1], "seed": 0},
        role="producer",
        library="torch",
        rule="DLPACK-STREAM-OPTIONAL",
        outcome="rejected-valid",
    )
    code, line = verdict_of(run(script_for_group(g), stand_ins, tmp_path))
    assert code == 1 and "BufferError: per-thread default stream" in line, line


def test_adversarial_a_consumer_dying_on_a_used_capsule_is_the_crash_scripts_bug(
    stand_ins: Path, tmp_path: Path
) -> None:
    g = group(
        "dlpack_adversarial/-/torch",
        {"kind": "used-capsule"},
        outcome="crash",
        severity="crashes",
    )
    text = script_for_group(g)
    code, line = verdict_of(run(text, stand_ins, tmp_path))
    assert code == 0 and line.startswith("OK: torch did not crash"), line
    code, line = verdict_of(run(text, stand_ins, tmp_path, "segv-on-used"))
    assert code == 1 and "killed the process with SIGSEGV given a used-capsule capsule" in line


def _copy_group(scenario: str, rule: str, **fields) -> dict:
    params = {"case": "copy", "scenario": scenario, "typestr": "<i4", "shape": [2, 3], "seed": 0}
    return group("dlpack_consumer/-/torch", params, rule=rule, **fields)


def test_from_dlpack_copy_true_that_aliases_prints_bug(stand_ins: Path, tmp_path: Path) -> None:
    text = script_for_group(_copy_group("true", "DLPACK-FROM-COPY-TRUE"))
    code, line = verdict_of(run(text, stand_ins, tmp_path))
    assert code == 0 and "gave a copy" in line, line
    code, line = verdict_of(run(text, stand_ins, tmp_path, "ignore-copy"))
    assert code == 1 and "6 of 6 elements followed the overwrite" in line, line
    assert line.endswith("[DLPACK-FROM-COPY-TRUE]")


def test_from_dlpack_copy_false_that_copies_prints_bug(stand_ins: Path, tmp_path: Path) -> None:
    """copy=False passed on to the reference producer exports in place: a view, OK; a consumer
    copying on its own (here: passing copy=True on, as a consumer that copies would) prints
    BUG."""
    text = script_for_group(_copy_group("false", "DLPACK-FROM-COPY-FALSE"))
    code, line = verdict_of(run(text, stand_ins, tmp_path))
    assert code == 0 and "gave a view (6 of 6 elements" in line, line
    copying = text.replace("copy=False)", "copy=True)", 1)
    code, line = verdict_of(run(copying, stand_ins, tmp_path))
    assert code == 1 and "gave a copy" in line and "[DLPACK-FROM-COPY-FALSE]" in line, line


def test_from_dlpack_of_its_own_device_refused_prints_bug(stand_ins: Path, tmp_path: Path) -> None:
    """A device asked for that is the array's own is a valid request: the stand-in passes it as
    dl_device and is answered; a producer refusing it (here: the script's producer taking the
    array's device for another) makes the consumer's refusal BUG under the group's rule."""
    g = _copy_group("none-own", "DLPACK-FROM-DEVICE", outcome="rejected-valid")
    text = script_for_group(g)
    assert 'device=f"cuda:{dev[1]}"' in text
    code, line = verdict_of(run(text, stand_ins, tmp_path))
    assert code == 0 and "gave a view" in line, line
    refusing = text.replace("tuple(wanted) != (2, 0)", "tuple(wanted) == (2, 0)", 1)
    code, line = verdict_of(run(refusing, stand_ins, tmp_path))
    assert code == 1 and "raised BufferError" in line and "[DLPACK-FROM-DEVICE]" in line, line


def test_a_consumer_releasing_before_it_reads_prints_bug(stand_ins: Path, tmp_path: Path) -> None:
    """The release case's deleter overwrites the block: an import that releases the tensor and
    then reads reads the poison; the conforming stand-in reads first, its deleter run once."""
    params = {"case": "release", "scenario": "none", "typestr": "<i4", "shape": [2, 3], "seed": 0}
    text = script_for_group(
        group("dlpack_consumer/-/torch", params, rule="DLPACK-CONSUMER-READS-DESCRIBED")
    )
    proc = run(text, stand_ins, tmp_path)
    code, line = verdict_of(proc)
    assert code == 0 and "read the values, then released the tensor" in line, line
    assert "deleter calls per tensor: [1]" in proc.stdout
    code, line = verdict_of(run(text, stand_ins, tmp_path, "release-first"))
    assert code == 1 and "6 of 6 elements after it released" in line, line
    assert line.endswith("[DLPACK-CONSUMER-READS-DESCRIBED]")
