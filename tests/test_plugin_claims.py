"""The pytest plugin judges what a library claims, and all of it (issue 40, item 6), on a CPU.

- A factory whose objects export only `__cuda_array_interface__` is skipped by the DLPack
  families (agreement included), with one reason in the summary, and never charged a defect:
  the adapter the runner sees does not claim "dlpack" for it.
- A dict that breaks a rule is still compared with the array asked for, so a baseline entry for
  the broken rule never hides a wrong shape.

`fakelib` is a host-memory library after /work/shared/cases/fakelib_pkg: `FAKELIB_BUG=stream0`
exports `stream: 0`, `shape` swaps the shape of 2-D arrays, `both` does both (read when the
dict is, so one process can run all three). Unlike that copy its factory keeps 0-d arrays 0-d.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest_plugins = ["pytester"]

FAKELIB = textwrap.dedent(
    """
    import os

    import numpy as np

    from caiconform.adapters.base import SkipExchange


    class FakeArray:
        \"\"\"A 'device' array that is really host memory, exporting the CAI alone.\"\"\"

        def __init__(self, values, typestr):
            self._host = np.array(values, dtype=np.dtype(typestr), order="C")
            self.typestr = typestr

        @property
        def __cuda_array_interface__(self):
            bug = os.environ.get("FAKELIB_BUG", "")
            d = {
                "shape": tuple(self._host.shape),
                "typestr": self.typestr,
                "data": (self._host.ctypes.data if self._host.size else 0, False),
                "strides": None,
                "version": 3,
                "stream": None,
            }
            if bug in ("stream0", "both"):
                d["stream"] = 0  # planted: stream 0 is forbidden by CAI v3
            if bug in ("shape", "both") and self._host.ndim == 2:
                d["shape"] = (self._host.shape[1], self._host.shape[0])  # planted
            return d


    class FakeArrayWithDLPack(FakeArray):
        def __dlpack__(self, stream=None):
            return self._host.__dlpack__()

        def __dlpack_device__(self):
            return (2, 0)


    def make_array(values, layout, typestr, stream_scenario):
        if typestr[1] not in "iuf":
            raise SkipExchange(f"fakelib has no {typestr} arrays")
        return FakeArray(values, typestr)


    def make_dlpack_array(values, layout, typestr, stream_scenario):
        return FakeArrayWithDLPack(make_array(values, layout, typestr, stream_scenario)._host, typestr)


    def to_host(obj):
        obj.__cuda_array_interface__
        raise SkipExchange("fakelib cannot read device memory")
    """
)

#: /work/shared/cases/fakelib_pkg/cai-expectations.stream0.yaml, the baseline of FAKELIB_BUG=stream0
STREAM0_BASELINE = textwrap.dedent(
    """
    version: 1
    expectations:
    - rule: CAI-STREAM-ZERO-FORBIDDEN
      producer: fakelib
      check: dict-schema
      outcome: fail
      detail:
      - '*'
      examples: 80
      reason: fakelib exports stream 0 (planted)
    """
)

FAST = ("-p", "no:cacheprovider", "--cai-max-examples", "8")


def _dlpack_producer_items() -> dict[str, str]:
    """family -> item name of every family that reads the producer's `__dlpack__`."""
    from caiconform.pytest_plugin.campaign import family_roles

    return {
        f.name: f"{f.name}[fakelib->peers]" if f.roles == "pair" else f"{f.name}[fakelib]"
        for f in family_roles()
        if "dlpack" in f.protocols and f.roles in ("pair", "producer")
    }


@pytest.fixture(autouse=True)
def own_fakelib():
    """Each test imports this file's `fakelib`, not one another test left in `sys.modules`
    (the plugin imports the factory's module in the test process), and leaves none behind."""
    saved = sys.modules.pop("fakelib", None)
    yield
    sys.modules.pop("fakelib", None)
    if saved is not None:
        sys.modules["fakelib"] = saved


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(fakelib=FAKELIB)
    (pytester.path / "cai-expectations.stream0.yaml").write_text(STREAM0_BASELINE)
    pytester.syspathinsert()
    return pytester


# --- what a producer claims -----------------------------------------------------------------


def test_a_producer_without_dlpack_is_skipped_by_the_dlpack_families_said_once(project):
    items = _dlpack_producer_items()
    assert {"agreement", "dlpack_roundtrip", "dlpack_copy"} <= set(items)
    result = project.runpytest(
        "--cai-producer",
        "fakelib:make_array",
        "--cai-consumer",
        "fakelib:to_host",
        "-k",
        " or ".join(items),
        *FAST,
    )
    outcomes = result.parseoutcomes()
    assert outcomes["skipped"] == len(items) and "failed" not in outcomes
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    reason = (
        "  fakelib's objects have no __dlpack__ (a fakelib.FakeArray made for <f4 (4,)): the "
        "DLPack families judge only a producer whose objects export it"
    )
    assert out.count("have no __dlpack__") == 1, out  # one line, with every item under it
    result.stdout.fnmatch_lines([f"skipped items ({len(items)}), by reason:", reason])
    listed = out.splitlines()[out.splitlines().index(reason) + 1]
    assert sorted(listed.strip().split(", ")) == sorted(items.values())
    assert "need a GPU" not in out  # with a GPU as without, these families do not judge it
    result.stdout.fnmatch_lines(
        [
            "DLPack families: fakelib's consumer is not judged over DLPack (no "
            "--cai-dlpack-consumer; fakelib:to_host imports over the CUDA Array Interface)"
        ]
    )


@pytest.mark.parametrize(
    ("factory", "checks"),
    [
        ("make_array", ["roundtrip"]),
        ("make_dlpack_array", ["roundtrip", "agreement", "dlpack_roundtrip"]),
    ],
)
def test_the_runner_is_given_what_the_factory_s_objects_export(
    tmp_path, monkeypatch, factory, checks
):
    """Without `__dlpack__` the producer direction's run leaves the DLPack families out, and
    the adapter the runner's workers import does not claim "dlpack", so no DLPack producer cell
    is planned; with it, both stay."""
    from caiconform.adapters import registry
    from caiconform.pytest_plugin.campaign import Campaign, Options, family_roles
    from caiconform.pytest_plugin.targets import Target
    from caiconform.runner import driver

    (tmp_path / "fakelib.py").write_text(FAKELIB)
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = {}

    def run_matrix(config):
        seen["checks"] = config.checks
        seen["capabilities"] = registry.get("fakelib").capabilities
        return SimpleNamespace(records=[], skipped=[])

    monkeypatch.setattr(driver, "run_matrix", run_matrix)
    options = Options(
        target=Target("fakelib", f"fakelib:{factory}", None),
        peers=["reference"],
        max_examples=2,
        expectations=[],
        report=None,
    )
    campaign = Campaign.start(options, (True, "pretend"))
    campaign.family_protocols.update((f.name, f.protocols) for f in family_roles())
    try:
        campaign.run_direction("producer", ["roundtrip", "agreement", "dlpack_roundtrip"])
    finally:
        campaign.close()
    assert seen["checks"] == checks
    assert "produce" in seen["capabilities"]
    assert ("dlpack" in seen["capabilities"]) == (len(checks) > 1)
    assert campaign.unjudged("roundtrip", "producer") is None
    assert campaign.unjudged("dlpack_roundtrip", "consumer") is None


def test_the_sample_says_what_the_factory_s_objects_export():
    from caiconform.adapters.base import SkipExchange
    from caiconform.pytest_plugin.targets import sample_exports

    class CAIOnly:
        __cuda_array_interface__ = {}

    class Raising(CAIOnly):
        @property
        def __dlpack__(self):
            raise RuntimeError("no capsule today")

    def only_ints(values, layout, typestr, scenario):
        if typestr[1] != "i":
            raise SkipExchange("no floats")
        assert values.dtype == np.dtype(typestr) and tuple(layout.shape) == (4,)
        return CAIOnly()

    def nothing(values, layout, typestr, scenario):
        raise RuntimeError("cudaErrorNoDevice")

    sample = sample_exports(only_ints)
    assert sample.exports == frozenset({"__cuda_array_interface__"})
    assert sample.description.endswith("CAIOnly made for <i4 (4,)")
    assert "__dlpack__" in sample_exports(lambda *args: Raising()).exports  # present: judged
    unknown = sample_exports(nothing)
    assert unknown.exports is None  # nothing made: the claim stands
    assert "<f4: RuntimeError: cudaErrorNoDevice" in unknown.description


# --- a broken rule never hides another defect -----------------------------------------------


@pytest.mark.parametrize(
    ("bug", "red"),
    [("both", True), ("shape", True), ("stream0", False)],
)
def test_a_baseline_entry_for_one_defect_never_hides_another(project, monkeypatch, bug, red):
    monkeypatch.setenv("FAKELIB_BUG", bug)
    args = ["--cai-producer", "fakelib:make_array", "--cai-consumer", "fakelib:to_host"]
    if bug != "shape":
        args += ["--cai-expectations", "cai-expectations.stream0.yaml"]
    result = project.runpytest("-m", "cai", "-k", "dict-schema", *args, *FAST)
    out = result.stdout.str()
    if not red:
        assert result.ret == pytest.ExitCode.OK, out
        result.stdout.fnmatch_lines(["OK: fakelib: no failing defect; 0 new since baseline*"])
        return
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    result.stdout.fnmatch_lines(
        [
            "FIX: fakelib: 1 failing defect(s) (*CAI-PRODUCER-DESCRIBES-DATA*",
            "defects of fakelib, failing: 1",
        ]
    )
    assert "minimal: shape: got (" in out and "(the factory's contract" in out
    if bug == "both":  # the stream 0 entry still covers stream 0, and only that
        result.stdout.fnmatch_lines(
            [
                "defects of fakelib covered by the expectations (baseline): 1",
                "  *CAI-STREAM-ZERO-FORBIDDEN*",
            ]
        )


def _exports(strides_of):
    """A factory whose dict holds the layout asked for, but `strides_of(layout, itemsize)`."""
    from math import prod

    def make(values, layout, typestr, scenario):
        itemsize = np.dtype(typestr).itemsize
        d = {
            "shape": tuple(layout.shape),
            "typestr": typestr,
            "data": (0 if prod(layout.shape) == 0 else 0x7F0000000000 + layout.offset, False),
            "strides": strides_of(layout, itemsize),
            "version": 3,
            "stream": None,
        }
        return SimpleNamespace(__cuda_array_interface__=d)

    return make


def _contract_failures(factory, kind: str) -> list[str]:
    from caiconform.pytest_plugin.schema import run_schema

    outcome = run_schema("mylib", factory, kind, 12, [], (False, "no GPU here"))
    return [r["message"] for r in outcome.records if r["outcome"] == "fail" and not r["rule"]]


def test_strides_are_the_layout_s_or_a_contiguous_array_s():
    from caiconform.spec.layout import c_strides, f_strides

    for kind in ("F", "padded", "sliced"):
        assert _contract_failures(_exports(lambda lay, n: lay.strides), kind) == []
        assert _contract_failures(_exports(lambda lay, n: None), kind) == []
        assert _contract_failures(_exports(lambda lay, n: f_strides(lay.shape, n)), kind) == []
        assert _contract_failures(_exports(lambda lay, n: c_strides(lay.shape, n)), kind) == []

    def elements(layout, itemsize):  # strides in elements, not bytes, where they differ
        strides = layout.effective_strides(itemsize)
        return tuple(s // itemsize if s and itemsize > 1 else s * 3 for s in strides)

    wrong = _contract_failures(_exports(elements), "padded")
    assert wrong and all(m.startswith("strides: got (") for m in wrong)
    assert "(the layout asked for) or a contiguous array's (the factory's contract" in wrong[0]


def test_a_dict_breaking_rules_is_still_compared_with_the_array_asked_for():
    def list_shape_swapped(values, layout, typestr, scenario):
        d = {
            "shape": list(reversed(layout.shape)),  # a list (CAI-SHAPE-TUPLE) and reversed
            "typestr": "|b1" if typestr != "|b1" else "<f4",
            "data": (0x7F0000000000, False),
            "version": 3,
            "stream": 0,  # CAI-STREAM-ZERO-FORBIDDEN
        }
        return SimpleNamespace(__cuda_array_interface__=d)

    from caiconform.pytest_plugin.schema import run_schema

    outcome = run_schema("mylib", list_shape_swapped, "C", 20, [], (False, "no GPU here"))
    rules = {r["rule"] for r in outcome.records}
    assert {"CAI-SHAPE-TUPLE", "CAI-STREAM-ZERO-FORBIDDEN"} <= rules
    heads = {r["message"].split(":", 1)[0] for r in outcome.records if r["rule"] is None}
    assert heads == {"shape", "typestr"}


DOCS = Path(__file__).parent.parent / "docs"


def test_the_docs_say_what_the_plugin_does():
    ci = " ".join((DOCS / "ci.md").read_text().split())
    assert (
        "a factory whose objects lack a protocol's export (`__dlpack__`, "
        "`__dlpack_c_exchange_api__`) is skipped by that protocol's families" in ci
    )
    assert "what was asked for, whatever rules it breaks" in ci
    assert "a baseline entry for the one never covers the other" in ci


def test_both_directions_are_one_run_of_the_user_s_cells(tmp_path, monkeypatch):
    """The producer and the consumer direction's items read one run (one start, their cells
    side by side): its `only_cells` are the user's library against each peer in each direction
    and in its one-sided families, never a peer against a peer or the library against itself;
    each direction sees only its own cells' records."""
    from types import SimpleNamespace

    from caiconform.pytest_plugin.campaign import Campaign, Options, family_roles
    from caiconform.pytest_plugin.targets import Target
    from caiconform.results.record import cell_key
    from caiconform.runner import driver

    (tmp_path / "fakelib.py").write_text(FAKELIB)
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = []

    def record(key):
        check, producer, consumer = key.split("/")
        return {"check": check, "producer": producer, "consumer": consumer, "outcome": "pass"}

    def run_matrix(config):
        calls.append(config)
        return SimpleNamespace(
            records=[record(k) for k in config.only_cells],
            skipped=[("readonly/-/fakelib", "why"), ("readonly/-/cupy", "a peer's: not asked")],
            run_dir=config.out,
        )

    monkeypatch.setattr(driver, "run_matrix", run_matrix)
    options = Options(
        target=Target("fakelib", "fakelib:make_dlpack_array", "fakelib:to_host"),
        peers=["reference", "cupy"],
        max_examples=2,
        expectations=[],
        report=None,
    )
    campaign = Campaign.start(options, (True, "pretend"))
    campaign.family_protocols.update((f.name, f.protocols) for f in family_roles())
    campaign.planned = {"producer": ["roundtrip", "schema"], "consumer": ["roundtrip", "readonly"]}
    try:
        produced = campaign.run_direction("producer", ["roundtrip"])
        consumed = campaign.run_direction("consumer", ["roundtrip"])
    finally:
        campaign.close()
    (config,) = calls  # one run for both directions
    assert config.only_cells == sorted(
        [
            "roundtrip/fakelib/reference",
            "roundtrip/fakelib/cupy",
            "schema/fakelib/-",
            "roundtrip/reference/fakelib",
            "roundtrip/cupy/fakelib",
            "readonly/-/fakelib",
        ]
    )
    assert config.checks == ["roundtrip", "schema", "readonly"]
    assert {cell_key(r) for r in produced.records} == {
        "roundtrip/fakelib/reference",
        "roundtrip/fakelib/cupy",
        "schema/fakelib/-",
    }
    assert {cell_key(r) for r in consumed.records} == {
        "roundtrip/reference/fakelib",
        "roundtrip/cupy/fakelib",
        "readonly/-/fakelib",
    }
    assert produced.skipped == [] and consumed.skipped == [("readonly/-/fakelib", "why")]
    assert len(campaign.records) == len(config.only_cells) and len(campaign.run_dirs) == 1


def test_from_dlpack_gives_the_adapter_the_copy_case_and_is_called_with_its_keywords(monkeypatch):
    """`--cai-from-dlpack` (with a DLPack consumer) claims "dlpack-copy": the copy case calls the
    user's function with copy and device as the family gives them, and reads its result back
    through the result's `__dlpack__` with the reference consumer (here host memory)."""
    from caiconform.pytest_plugin import adapter as plugin_adapter
    from caiconform.reference import dlpack_import

    seen = []

    def from_dlpack(obj, *, copy=None, device=None):
        seen.append((copy, device))
        return obj

    monkeypatch.setattr(plugin_adapter, "resolve", lambda spec: from_dlpack)
    read = []
    monkeypatch.setattr(
        dlpack_import,
        "import_dlpack",
        lambda obj: read.append(obj) or SimpleNamespace(values=np.from_dlpack(obj)),
    )

    class User(plugin_adapter.FunctionAdapter):
        name = "mylib"
        dlpack_consumer_spec = "mylib:read"

    assert "dlpack-copy" not in User().capabilities  # without --cai-from-dlpack
    User.from_dlpack_spec = "mylib:from_dlpack"
    assert {"consume-dlpack", "dlpack-copy"} <= User().capabilities
    source = np.arange(4, dtype=np.int32)
    values, result = User().consume_dlpack_with(source, copy=True, device=(1, 0))
    assert seen == [(True, (1, 0))] and result is source and read == [source]
    assert np.array_equal(values, source) and values is not source
    source[0] = 7  # the result read again: the memory as it is now
    assert User().read_result(result)[0] == 7
