"""The dlpack_consumer family without a GPU: the streams a consumer passes judged whatever it
read (0 and values below -1), the values it read judged by what they are (the sentinel of a
read before the pending write, the poison of a read after the release, other wrong values),
the recorder of `__dlpack__` calls, and the reference export's release hook (the block poisoned
by the first deleter call only, before the owner is let go)."""

from __future__ import annotations

import numpy as np
import pytest

from caiconform.checks import dlpack_consumer as family
from caiconform.reference import dlpack_export as dx
from caiconform.reference.dlpack_producer import POISON
from caiconform.reference.producer import sentinel_of

VALUES = np.arange(8, dtype=np.float32) + 0.5


@pytest.mark.parametrize(
    ("streams", "rule"),
    [([0], "DLPACK-STREAM-ZERO-FORBIDDEN"), ([None, -2], "DLPACK-STREAM-MIN")],
)
def test_a_stream_the_text_forbids_fails_whatever_was_read(streams, rule) -> None:
    result = family.judge_streams(streams, "ctx")
    assert result is not None and (result.outcome, result.rule) == ("fail", rule)


@pytest.mark.parametrize("streams", [[None], [1], [2], [-1], [0x7F00_0000_1000]])
def test_a_stream_the_text_allows_is_no_finding_by_itself(streams) -> None:
    assert family.judge_streams(streams, "ctx") is None


def test_the_sentinel_read_after_passing_no_sync_is_the_consumer_s_stream_defect() -> None:
    got = VALUES.copy()
    got[:3] = sentinel_of(VALUES)[:3]
    result = family.judge_values(got, VALUES, "stream", [-1], "ctx")
    assert (result.outcome, result.rule) == ("fail", "DLPACK-STREAM-PRODUCER-SYNC")
    assert "3 of 8 elements" in result.message and "[-1]" in result.message


def test_the_poison_read_after_the_release_is_a_read_of_other_elements() -> None:
    got = VALUES.copy()
    got.view(np.uint8)[:8] = POISON
    result = family.judge_values(got, VALUES, "release", [None], "ctx")
    assert (result.outcome, result.rule) == ("fail", "DLPACK-CONSUMER-READS-DESCRIBED")
    assert "2 of 8 elements read after the tensor's deleter ran" in result.message


def test_other_wrong_values_are_a_misreading_and_right_ones_no_finding() -> None:
    got = VALUES[::-1].copy()
    for case in family.CASES:
        result = family.judge_values(got, VALUES, case, [None], "ctx")
        assert result.rule == "DLPACK-CONSUMER-READS-DESCRIBED" and "poison" not in result.message
        assert family.judge_values(VALUES.copy(), VALUES, case, [None], "ctx") is None


def test_the_recorder_keeps_each_call_s_stream_and_shows_dlpack_alone() -> None:
    recorder = family.Recorder(VALUES)
    recorder.__dlpack__(stream=None, max_version=(1, 0))
    recorder.__dlpack__()
    assert recorder.streams == [None, None] and len(recorder.calls) == 2
    assert recorder.calls[0]["max_version"] == (1, 0)
    assert recorder.__dlpack_device__() == VALUES.__dlpack_device__()
    assert not hasattr(recorder, "__cuda_array_interface__")
    assert np.array_equal(np.from_dlpack(recorder), VALUES)


def test_the_release_hook_runs_once_at_the_first_deleter_call() -> None:
    seen = []
    owner = VALUES.copy()
    capsule, export = dx.host_capsule(owner)
    export.on_release = lambda: seen.append(export.deleter_calls)
    address = dx.consume_name(capsule)
    assert dx.call_deleter(address, True) and seen == [1] and export.owner is None
    dx.call_deleter(address, True)  # a second call: counted, the hook not run again
    assert seen == [1] and export.deleter_calls == 2


def test_every_case_is_drawn_and_in_the_floor() -> None:
    from hypothesis import given, settings

    drawn = set()

    @settings(max_examples=40, deadline=None, database=None)
    @given(family.examples(None, "torch"))
    def draw(params):
        assert params["scenario"] in family.CASES[params["case"]]
        drawn.add(params["case"])

    draw()
    assert drawn == set(family.CASES)
    floor = {(e.params["case"], e.params["scenario"]) for e in family.floor(None, "torch")}
    assert floor == {(c, s) for c, scenarios in family.CASES.items() for s in scenarios}


def _group(case: str, scenario: str) -> dict:
    from tests.test_standalone import group

    params = {"case": case, "scenario": scenario, "typestr": "<f4", "shape": [64], "seed": 0}
    return group("dlpack_consumer/-/torch", params, rule="DLPACK-STREAM-PRODUCER-SYNC")


@pytest.mark.parametrize("scenario", ["pending", "legacy"])
def test_the_stream_case_gets_a_standalone_script(scenario) -> None:
    """A script that imports no caiconform, leaves the write pending, counts the sentinel
    (it needs a GPU to run: `sleep_on` is a host function on the stream)."""
    from caiconform.report.standalone import script_for_group
    from tests.test_standalone import check_script

    text = script_for_group(_group("stream", scenario))
    assert text is not None
    check_script(text)
    assert "sleep_on(work" in text and "cuStreamWaitEvent" in text and "read(obj)" in text
    assert "DLPACK-STREAM-PRODUCER-SYNC" in text
    compile(text, "repro.py", "exec")


def test_the_release_case_gets_a_script_whose_deleter_poisons_the_block() -> None:
    """(tests/test_standalone_dlpack.py runs it over the stand-in driver and torch.)"""
    from caiconform.report.standalone import script_for_group
    from tests.test_standalone import check_script

    text = script_for_group(_group("release", "none"))
    assert text is not None
    check_script(text)
    assert "cuMemsetD8(ptr, 165, n)" in text and "read(obj)" in text
    compile(text, "repro.py", "exec")


def test_the_plugin_judges_a_dlpack_consumer_with_the_family() -> None:
    from caiconform.pytest_plugin.campaign import directions_of, family_roles
    from caiconform.pytest_plugin.targets import Target

    infos = {info.name: info for info in family_roles("dlpack")}
    assert infos["dlpack_consumer"].roles == "consumer"
    protocols = infos["dlpack_consumer"].protocols
    with_dlpack = Target("mylib", None, "mylib:read", dlpack_consumer="mylib:from_dlpack")
    assert directions_of("consumer", with_dlpack, protocols) == ["consumer"]
    assert directions_of("consumer", Target("mylib", None, "mylib:read"), protocols) == []
