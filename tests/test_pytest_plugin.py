"""The pytest plugin, driven through `pytester`: inert without options, the dict-schema items
against conforming and broken producers, expectations, option errors, the fixtures, the report.

The producers here are pure-Python objects with hand-made interface dicts, so everything but
the exchanges runs on a machine without a GPU.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from caiconform.cuda import gpu_available

pytest_plugins = ["pytester"]

GPU, NO_GPU_REASON = gpu_available()

FAKELIB = textwrap.dedent(
    """
    from math import prod


    class Export:
        def __init__(self, d):
            self.__cuda_array_interface__ = d


    def make(values, layout, typestr, stream_scenario):
        empty = prod(layout.shape) == 0
        return Export({
            "shape": tuple(layout.shape),
            "typestr": typestr,
            "data": (0 if empty else 0x7F0000000000 + layout.offset, False),
            "strides": None if layout.strides is None else tuple(layout.strides),
            "version": 3,
            "stream": None,
        })


    def make_bad_empty(values, layout, typestr, stream_scenario):
        obj = make(values, layout, typestr, stream_scenario)
        if prod(layout.shape) == 0:
            obj.__cuda_array_interface__["data"] = (0x7F0000000000, False)
        return obj


    def make_list_shape(values, layout, typestr, stream_scenario):
        obj = make(values, layout, typestr, stream_scenario)
        obj.__cuda_array_interface__["shape"] = list(layout.shape)
        return obj


    def make_wrong_dtype(values, layout, typestr, stream_scenario):
        obj = make(values, layout, typestr, stream_scenario)
        obj.__cuda_array_interface__["typestr"] = "|u1" if typestr != "|u1" else "<f4"
        return obj


    def needs_device(values, layout, typestr, stream_scenario):
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")


    def only_floats(values, layout, typestr, stream_scenario):
        from caiconform.adapters.base import SkipExchange

        raise SkipExchange(f"fakelib has no {typestr} arrays")
    """
)

SCHEMA = ("-k", "dict-schema", "--cai-max-examples", "8", "-p", "no:cacheprovider")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(fakelib=FAKELIB, test_own="def test_own():\n    assert True\n")
    pytester.syspathinsert()
    return pytester


# --- inert without options ------------------------------------------------------------------


def test_without_options_the_plugin_is_inert(pytester: pytest.Pytester):
    pytester.makeconftest(
        textwrap.dedent(
            """
            import json, sys

            def pytest_unconfigure(config):
                loaded = sorted(m for m in sys.modules if m.startswith("caiconform"))
                with open("loaded.json", "w") as fh:
                    json.dump(loaded, fh)
            """
        )
    )
    pytester.makepyfile(test_own="def test_own():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "caiconform-0.1.0" in result.stdout.str()  # listed among the plugins
    assert not re.search(r"=+ caiconform =+", result.stdout.str())  # but no summary section
    loaded = set(json.loads((pytester.path / "loaded.json").read_text()))
    assert "caiconform.pytest_plugin" in loaded  # registered through the pytest11 entry point
    heavy = {
        "caiconform.pytest_plugin.campaign",
        "caiconform.pytest_plugin.schema",
        "caiconform.results.expectations",
        "caiconform.cuda",
        "caiconform.runner",
        "caiconform.report",
        "caiconform.adapters",
    }
    assert not loaded & heavy


DOCS = Path(__file__).parent.parent / "docs"


def test_options_are_registered_and_documented(pytester: pytest.Pytester):
    out = pytester.runpytest("--help").stdout.str()
    registered = set(re.findall(r"(--cai-[a-z-]+)", out))
    assert registered == {
        "--cai-producer",
        "--cai-consumer",
        "--cai-dlpack-consumer",
        "--cai-from-dlpack",
        "--cai-protocol",
        "--cai-against",
        "--cai-max-examples",
        "--cai-expectations",
        "--cai-report",
        "--cai-name",
        "--cai-fail-on",
        "--cai-write-baseline",
        "--cai-seed",
    }
    ci = (DOCS / "ci.md").read_text()
    assert set(re.findall(r"(--cai-[a-z-]+)", ci)) == registered  # every one, and no other
    documented = set(re.findall(r"(--cai-[a-z-]+)", (DOCS / "expectations.md").read_text()))
    assert documented <= registered


def test_documented_workflow_is_valid_yaml_using_real_options():
    import yaml

    (block,) = re.findall(r"```yaml\n(.*?)```", (DOCS / "ci.md").read_text(), re.S)
    workflow = yaml.safe_load(block)
    steps = workflow["jobs"]["conformance"]["steps"]
    (command,) = [s["run"] for s in steps if "pytest" in s.get("run", "")]
    assert "pytest -m cai" in command
    assert "--cai-producer mylib.testing:make_array" in command


# --- dict-schema items ----------------------------------------------------------------------


def test_conforming_producer_passes_every_layout_kind(project):
    result = project.runpytest("--cai-producer", "fakelib:make", *SCHEMA)
    result.assert_outcomes(passed=6, deselected=result.parseoutcomes().get("deselected", 0))
    out = result.stdout.str()
    assert "library under test: fakelib (producer fakelib:make" in out
    assert "dict-schema: 48 example(s): pass 48" in out
    # negative and broadcast layouts are legal but non-portable: warnings, not failures
    assert "CAI-PORT-NEGATIVE-STRIDES" in out and "CAI-PORT-OVERLAP" in out


def test_a_broken_rule_fails_with_its_id_and_the_smallest_example(project):
    result = project.runpytest("--cai-producer", "fakelib:make_list_shape", *SCHEMA)
    assert result.parseoutcomes()["failed"] == 6
    result.stdout.fnmatch_lines(
        [
            "*failing example(s) of dict-schema:",
            "*[[]CAI-SHAPE-TUPLE[]] shape*",
            "smallest: shape: got *, expected a tuple*[[]CAI-SHAPE-TUPLE[]]",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_dict_that_describes_another_dtype_breaks_the_factory_contract(project):
    result = project.runpytest("--cai-producer", "fakelib:make_wrong_dtype", *SCHEMA)
    assert result.parseoutcomes()["failed"] == 6
    result.stdout.fnmatch_lines(["*typestr: got '*', expected '*' (the factory's contract*"])


def test_factory_skips_are_reported(project):
    result = project.runpytest("--cai-producer", "fakelib:only_floats", *SCHEMA)
    result.assert_outcomes(skipped=6, deselected=result.parseoutcomes().get("deselected", 0))
    result.stdout.fnmatch_lines(
        ["skipped items (6), by reason:", "  the factory skipped every example: fakelib has no *"]
    )


def test_factory_that_needs_a_gpu(project):
    result = project.runpytest("--cai-producer", "fakelib:needs_device", *SCHEMA)
    outcomes = result.parseoutcomes()
    if GPU:
        # with a GPU present, a factory that raises is a defect of the test setup: an item
        # where it built nothing fails with the hint to raise SkipExchange
        assert outcomes["failed"] == 6
        result.stdout.fnmatch_lines(
            ["*the factory could not build any example (raise *SkipExchange*", "*RuntimeError*"]
        )
    else:
        assert outcomes["skipped"] == 6
        result.stdout.fnmatch_lines(
            [f"GPU: none ({NO_GPU_REASON})", "*the factory raised RuntimeError*no GPU is present*"]
        )


def test_cai_marker_selects_the_generated_items(project):
    result = project.runpytest(
        "--cai-producer", "fakelib:make", "-m", "cai", "-k", "dict-schema", "-p", "no:cacheprovider"
    )
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == 6  # the project's own test_own is not marked `cai`
    listed = project.runpytest(
        "--cai-producer", "fakelib:make", "-m", "not cai", "--collect-only", "-q"
    )
    assert "test_own.py::test_own" in listed.stdout.str()
    assert "dict-schema" not in listed.stdout.str()


def test_generated_item_ids(project):
    result = project.runpytest("--cai-producer", "fakelib:make", "--collect-only", "-q")
    out = result.stdout.str()
    for kind in ("C", "F", "padded", "sliced", "negative", "broadcast"):
        assert f"caiconform::dict-schema[{kind}]" in out


def test_consumer_only_has_no_dict_schema_items(project):
    result = project.runpytest("--cai-consumer", "fakelib:make", "--collect-only", "-q")
    assert "dict-schema" not in result.stdout.str()


# --- expectations ---------------------------------------------------------------------------


def _expect(project: pytest.Pytester, body: str) -> str:
    path = project.path / "expect.yaml"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_expected_failures_become_xfail(project):
    expect = _expect(
        project,
        """
        expectations:
          - rule: CAI-SHAPE-TUPLE
            producer: fakelib
            check: dict-schema
            reason: fakelib exports shape as a list (issue 12)
        """,
    )
    result = project.runpytest(
        "--cai-producer", "fakelib:make_list_shape", "--cai-expectations", expect, *SCHEMA
    )
    outcomes = result.parseoutcomes()
    assert outcomes["xfailed"] == 6 and "failed" not in outcomes
    assert result.ret == pytest.ExitCode.OK


def test_an_expected_failure_that_passes_fails_the_session(project):
    expect = _expect(
        project,
        """
        expectations:
          - rule: CAI-SHAPE-TUPLE
            producer: fakelib
            reason: fixed since, so this entry is stale
        """,
    )
    result = project.runpytest(
        "--cai-producer", "fakelib:make", "--cai-expectations", expect, *SCHEMA
    )
    assert result.parseoutcomes()["passed"] == 6
    result.stdout.fnmatch_lines(["error: *entry 1 (CAI-SHAPE-TUPLE, fakelib -> *)*did not happen*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_an_entry_matching_nothing_fails_the_session(project):
    expect = _expect(
        project,
        """
        expectations:
          - rule: CAI-SHAPE-TUPLE
            producer: otherlib
            reason: a typo in the library name
        """,
    )
    result = project.runpytest(
        "--cai-producer", "fakelib:make", "--cai-expectations", expect, *SCHEMA
    )
    result.stdout.fnmatch_lines(
        ["error: *entry 1 (CAI-SHAPE-TUPLE, otherlib -> *)*matches no result*"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_an_entry_about_a_check_that_did_not_run_is_only_a_note(project):
    expect = _expect(
        project,
        """
        expectations:
          - rule: CAI-SYNC-CONSUMER
            check: streams
            reason: judged only where the streams family runs
        """,
    )
    result = project.runpytest(
        "--cai-producer", "fakelib:make", "--cai-expectations", expect, *SCHEMA
    )
    result.stdout.fnmatch_lines(["note: *entry 1 (CAI-SYNC-CONSUMER, * -> *): not judged*"])
    assert result.ret == pytest.ExitCode.OK


def test_an_entry_about_a_check_caiconform_does_not_know_is_an_error_not_a_note(project):
    """`check: schmea` is refused as a typo of `schema`; a name like no check at all, which
    no result carries, fails the session instead of being noted as not run."""
    entry = "expectations:\n  - rule: CAI-SYNC-CONSUMER\n    check: {}\n    reason: typo\n"
    misspelt = _expect(project, entry.format("schmea"))
    result = project.runpytest("--cai-producer", "fakelib:make", "--cai-expectations", misspelt)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "field 'check': unknown check 'schmea': did you mean 'schema'?" in result.stderr.str()
    unknown = _expect(project, entry.format("no_such_family"))
    result = project.runpytest(
        "--cai-producer", "fakelib:make", "--cai-expectations", unknown, *SCHEMA
    )
    result.stdout.fnmatch_lines(["error: *entry 1 (CAI-SYNC-CONSUMER, * -> *)*matches no result*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# --- option errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--cai-producer", "fakelib.make"), "--cai-producer: expected 'module:function'"),
        (("--cai-producer", "fakelib:make", "--cai-against", "nolib"), "unknown adapter 'nolib'"),
        (("--cai-producer", "fakelib:make", "--cai-max-examples", "0"), "must be >= 1, got 0"),
        (("--cai-producer", "fakelib:make", "-n", "2"), "cannot be combined with pytest-xdist"),
        (("--cai-from-dlpack", "fakelib:make"), "--cai-from-dlpack needs --cai-dlpack-consumer"),
        (
            ("--cai-dlpack-consumer", "fakelib:make", "--cai-from-dlpack", "fakelib.make"),
            "--cai-from-dlpack: expected 'module:function'",
        ),
    ],
)
def test_bad_options_are_usage_errors(project, args, message):
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_report_directory_that_cannot_be_made_is_a_usage_error(project):
    (project.path / "a_file").write_text("")
    result = project.runpytest("--cai-producer", "fakelib:make", "--cai-report", "a_file/report")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--cai-report: cannot create a_file/report/runs/" in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_malformed_expectation_file_names_entry_and_field(project):
    expect = _expect(project, "expectations:\n  - rule: CAI-SHAPE-TUPLE\n    reasn: typo\n")
    result = project.runpytest("--cai-producer", "fakelib:make", "--cai-expectations", expect)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "entry 1 (CAI-SHAPE-TUPLE): field 'reasn': unknown field" in result.stderr.str()


def test_factory_that_cannot_be_imported_fails_its_items(project):
    result = project.runpytest("--cai-producer", "nolib.sub:make", *SCHEMA)
    assert result.parseoutcomes()["failed"] == 6
    result.stdout.fnmatch_lines(["*nolib.sub:make: cannot import nolib.sub: ModuleNotFoundError*"])


# --- exchanges ------------------------------------------------------------------------------


@pytest.mark.skipif(GPU, reason="checks what happens without a GPU; the GPU case is below")
def test_without_gpu_exchange_items_skip_and_say_why(project):
    result = project.runpytest(
        "--cai-consumer", "fakelib:make", "-k", "peers", "-p", "no:cacheprovider"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) >= 1 and "passed" not in outcomes
    result.stdout.fnmatch_lines(
        ["*exchanges with other libraries need a GPU: *", "*peers->fakelib*"]
    )


@pytest.mark.gpu
def test_exchange_with_the_reference_library(project):
    if not GPU:
        pytest.skip(f"needs a GPU: {NO_GPU_REASON}")
    project.makepyfile(
        reflib=textwrap.dedent(
            """
            from caiconform.adapters.registry import get

            def make(values, layout, typestr, stream_scenario):
                return get("reference").produce(values, layout, typestr, stream_scenario)
            """
        )
    )
    result = project.runpytest(
        "--cai-producer",
        "reflib:make",
        "--cai-against",
        "reference",
        "--cai-max-examples",
        "5",
        "-k",
        "roundtrip",
        "-rA",
        "-p",
        "no:cacheprovider",
    )
    # `-k roundtrip` selects dlpack_roundtrip too: it judges reflib only where the reference's
    # objects export __dlpack__ and the reference imports DLPack, so ask rather than assume
    from caiconform.adapters.registry import get
    from caiconform.spec.layout import Layout

    reference = get("reference")
    sample = reference.produce(np.arange(4, dtype="<f4"), Layout((4,)), "<f4")
    passing = ["roundtrip[reflib->peers]"]
    if "consume-dlpack" in reference.capabilities and hasattr(sample, "__dlpack__"):
        passing.append("dlpack_roundtrip[reflib->peers]")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == len(passing) and "failed" not in outcomes, outcomes
    result.stdout.fnmatch_lines_random([f"PASSED caiconform::{item}" for item in passing])
    assert "exchanges: " in result.stdout.str()


# --- the report -----------------------------------------------------------------------------


def test_cai_report_writes_runs_and_the_report(project):
    out = project.path / "cai-report"
    result = project.runpytest(
        "--cai-producer", "fakelib:make_bad_empty", "--cai-report", str(out), *SCHEMA
    )
    assert result.parseoutcomes().get("failed", 0) >= 1
    result.stdout.fnmatch_lines([f"report: {out / 'index.html'}"])
    (session,) = (out / "runs").iterdir()  # one directory per session
    records = [
        json.loads(line) for line in (session / "local" / "results.jsonl").read_text().splitlines()
    ]
    assert len(records) == 48 and {r["check"] for r in records} == {"dict-schema"}
    matrix = json.loads((out / "matrix.json").read_text())
    (cell,) = [c for c in matrix["cells"] if c["check"] == "dict-schema"]
    assert (cell["producer"], cell["consumer"], cell["total"]) == ("fakelib", None, 48)
    assert any(f["rule"] == "CAI-DATA-ZERO-SIZE-NULL" for f in matrix["findings"])
    # every dict-schema example ran in the pytest process: its cell is finished, not INCOMPLETE
    assert matrix["run_state"]["status"] == "complete", matrix["run_state"]
    assert (out / "index.html").is_file() and (session / "local" / "env.json").is_file()
    # the same report directory again: a second session directory, a fresh report
    again = project.runpytest("--cai-producer", "fakelib:make", "--cai-report", str(out), *SCHEMA)
    assert again.parseoutcomes()["passed"] == 6
    assert len(list((out / "runs").iterdir())) == 2
    assert json.loads((out / "matrix.json").read_text())["findings"] == []


# --- fixtures -------------------------------------------------------------------------------


def test_cai_validate_fixture_lists_rule_ids_seen_and_expected(project):
    project.makepyfile(
        test_fixture=textwrap.dedent(
            """
            import fakelib
            from caiconform.spec.layout import Layout

            def test_good(cai_validate):
                report = cai_validate(fakelib.make(None, Layout((2, 3)), "<f4", "none"))
                assert report.ok

            def test_bad(cai_validate):
                cai_validate(fakelib.make_bad_empty(None, Layout((0, 3)), "<f4", "none"))
            """
        )
    )
    result = project.runpytest("test_fixture.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*1 CUDA Array Interface violation(s) (judged as version 3):",
            "*data[[]0[]]: got 0x7f0000000000*expected 0*[[]CAI-DATA-ZERO-SIZE-NULL[]]",
        ]
    )
    assert "assert_conforms" not in result.stdout.str()  # __tracebackhide__ / pytrace=False


@pytest.mark.skipif(GPU, reason="checks the no-GPU skip; the GPU case is test_roundtrip_on_gpu")
def test_cai_roundtrip_fixture_skips_without_gpu(project):
    project.makepyfile(
        test_rt=textwrap.dedent(
            """
            import fakelib
            from caiconform.spec.layout import Layout

            def test_rt(cai_roundtrip):
                cai_roundtrip(fakelib.make(None, Layout((2,)), "<f4", "none"))
            """
        )
    )
    result = project.runpytest("test_rt.py", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*cai_roundtrip needs a GPU: *"])


@pytest.mark.gpu
def test_roundtrip_on_gpu():
    if not GPU:
        pytest.skip(f"needs a GPU: {NO_GPU_REASON}")
    from caiconform.adapters.registry import get
    from caiconform.pytest_plugin.fixtures import roundtrip
    from caiconform.spec.layout import Layout

    values = np.arange(12, dtype="<f4").reshape(3, 4)
    obj = get("reference").produce(values, Layout((3, 4)), "<f4")
    np.testing.assert_array_equal(roundtrip(obj, "reference", expected=values), values)
    with pytest.raises(pytest.fail.Exception, match="read wrong values: 12 of 12 elements differ"):
        roundtrip(obj, "reference", expected=values + 1)


# --- the runner sees the user's functions as an adapter (CPU, with test-only families) -------

CPU_FAMILIES = textwrap.dedent(
    """
    import numpy as np
    from hypothesis import strategies as st

    from caiconform.adapters.registry import get
    from caiconform.results.outcome import FAIL, PASS, Result
    from caiconform.spec.layout import Layout
    from caiconform.spec.validate import validate

    FAMILY = "{name}"
    ROLES = "{roles}"
    NEEDS_GPU = False


    def examples(producer, consumer):
        return st.fixed_dictionaries({{"n": st.integers(0, 3)}})


    def execute(params, producer, consumer):
        n = params["n"]
        obj = get(producer).produce(np.zeros(n, "<f4"), Layout((n,)), "<f4", "none")
        report = validate(obj)
        if report.ok:
            return Result(PASS)
        first = report.errors[0]
        return Result(FAIL, first.rule, first.message, first.seen, first.expected)


    def repro(params, producer, consumer):
        return "print('repro')\\n"
    """
)


def test_runner_runs_the_users_factory_in_its_workers(tmp_path, monkeypatch):
    from caiconform.adapters import registry
    from caiconform.pytest_plugin.campaign import Campaign, Options
    from caiconform.pytest_plugin.targets import Target

    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "fakelib.py").write_text(FAKELIB)
    (mods / "cpufams").mkdir()
    (mods / "cpufams" / "__init__.py").write_text("")
    (mods / "cpufams" / "producer.py").write_text(
        CPU_FAMILIES.format(name="cpuprod", roles="producer")
    )
    (mods / "cpufams" / "pair.py").write_text(CPU_FAMILIES.format(name="cpupair", roles="pair"))
    monkeypatch.syspath_prepend(str(mods))
    options = Options(
        target=Target("fakelib", "fakelib:make_bad_empty", None),
        peers=["reference"],
        max_examples=10,
        expectations=[],
        report=None,
    )
    campaign = Campaign.start(options, (False, "test"))
    try:
        result = campaign.run_direction("producer", ["cpufams.producer", "cpufams.pair"])
        assert "fakelib" in registry.names()  # the generated entry point, seen here too
    finally:
        campaign.close()
    assert "fakelib" not in registry.names()  # and gone after the session
    assert not campaign.workdir.exists()
    produced = [r for r in result.records if r["check"] == "cpuprod"]
    assert {(r["producer"], r["consumer"]) for r in produced} == {("fakelib", None)}
    by_n = {r["params"]["n"]: r for r in produced if not r["shrunk"]}
    assert by_n[0]["outcome"] == "fail" and by_n[0]["rule"] == "CAI-DATA-ZERO-SIZE-NULL"
    assert all(r["outcome"] == "pass" for n, r in by_n.items() if n > 0)
    # the pair family plans only fakelib -> peers (no reference -> reference, no reverse pair)
    pairs = [r for r in result.records if r["check"] == "cpupair"]
    assert {(r["producer"], r["consumer"]) for r in pairs} == {("fakelib", "reference")}
    if GPU:  # the reference is available: the cell runs (the family itself needs no GPU)
        assert {r["outcome"] for r in pairs} == {"pass", "fail"}
    else:
        (skip,) = pairs
        assert skip["outcome"] == "skip" and "reference unavailable" in skip["message"]


def test_each_direction_runs_only_the_selected_families(project):
    project.makeconftest(
        textwrap.dedent(
            """
            import json
            import pytest

            def pytest_runtest_setup(item):
                if hasattr(item, "families"):
                    with open("families.jsonl", "a") as fh:
                        fh.write(json.dumps([item.name, item.direction, item.families]) + "\\n")
                    pytest.skip("recorded the families this item's run would cover")
            """
        )
    )
    result = project.runpytest(
        "--cai-producer",
        "fakelib:make",
        "--cai-consumer",
        "fakelib:make",
        "-k",
        "(roundtrip and not dlpack) or adversarial",
        "-p",
        "no:cacheprovider",
    )
    assert result.parseoutcomes()["skipped"] == 3
    seen = [json.loads(line) for line in (project.path / "families.jsonl").read_text().splitlines()]
    assert sorted(seen) == [
        ["adversarial[fakelib]", "consumer", ["roundtrip", "adversarial"]],
        ["roundtrip[fakelib->peers]", "producer", ["roundtrip"]],
        ["roundtrip[peers->fakelib]", "consumer", ["roundtrip", "adversarial"]],
    ]


# --- verdicts: severity, culprits, baseline (CPU) -------------------------------------------


def test_fail_on_leaves_what_is_below_the_threshold_reported_not_failing(project):
    # a list for a shape breaks a MUST rule of the export: refuses-valid, failing by default
    strict = project.runpytest("--cai-producer", "fakelib:make_list_shape", *SCHEMA)
    assert strict.parseoutcomes()["failed"] == 6
    strict.stdout.fnmatch_lines(
        ["FIX: fakelib: 1 failing defect(s) (refuses-valid: fakelib producer CAI-SHAPE-TUPLE *"]
    )
    lenient = project.runpytest(
        "--cai-producer", "fakelib:make_list_shape", "--cai-fail-on", "corrupts,crashes", *SCHEMA
    )
    assert lenient.parseoutcomes()["passed"] == 6 and lenient.ret == pytest.ExitCode.OK
    lenient.stdout.fnmatch_lines(
        [
            "OK: fakelib: no failing defect; 1 below --fail-on (1 refuses-valid)*",
            "defects of fakelib below --cai-fail-on, reported, not failing: 1",
            "  refuses-valid: fakelib producer CAI-SHAPE-TUPLE (MUST, derived, fail, * example(s))",
        ]
    )
    bad = project.runpytest("--cai-producer", "fakelib:make", "--cai-fail-on", "fatal")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--cai-fail-on: unknown severity 'fatal'" in bad.stderr.str()


def test_baseline_round_trip(project):
    """Write a baseline from the first run; the next runs are green; a fix (the defect gone)
    makes the run red until its entry is deleted; a new defect is red."""
    baseline = project.path / "cai-expectations.yaml"
    first = project.runpytest(
        "--cai-producer", "fakelib:make_bad_empty", "--cai-write-baseline", str(baseline), *SCHEMA
    )
    assert first.parseoutcomes()["failed"] >= 1
    first.stdout.fnmatch_lines([f"baseline: wrote 1 expectation(s) to {baseline}*"])
    text = baseline.read_text()
    assert "rule: CAI-DATA-ZERO-SIZE-NULL" in text and "producer: fakelib" in text
    assert "reason: 'TODO: why this is expected" in text
    entry = yaml.safe_load(text)["expectations"][0]
    assert entry["detail"] and entry["examples"] >= 1  # the failure mode pinned
    for _ in range(2):
        again = project.runpytest(
            "--cai-producer", "fakelib:make_bad_empty", "--cai-expectations", str(baseline), *SCHEMA
        )
        assert again.ret == pytest.ExitCode.OK and "failed" not in again.parseoutcomes()
        again.stdout.fnmatch_lines(["OK: fakelib: no failing defect; 0 new since baseline*"])
    fixed = project.runpytest(
        "--cai-producer", "fakelib:make", "--cai-expectations", str(baseline), *SCHEMA
    )
    assert fixed.ret == pytest.ExitCode.TESTS_FAILED
    fixed.stdout.fnmatch_lines(["UPDATE THE BASELINE: fakelib: 1 expectation(s) no longer hold*"])
    new = project.runpytest(
        "--cai-producer", "fakelib:make_list_shape", "--cai-expectations", str(baseline), *SCHEMA
    )
    assert new.ret == pytest.ExitCode.TESTS_FAILED
    new.stdout.fnmatch_lines(
        ["FIX: fakelib: 1 failing defect(s) (refuses-valid: * CAI-SHAPE-TUPLE*"]
    )


def _record(producer, consumer, outcome, rule, check="roundtrip", **extra):
    return {
        "run_id": "r",
        "check": check,
        "producer": producer,
        "consumer": consumer,
        "outcome": outcome,
        "rule": rule,
        "params": {"typestr": "<f4", "seed": 0},
        "message": extra.pop("message", f"{producer}->{consumer}: {rule}"),
        "shrunk": False,
        **extra,
    }


def _campaign(records, expectations=()):
    from caiconform.pytest_plugin.campaign import Campaign, Options
    from caiconform.pytest_plugin.targets import Target

    options = Options(
        target=Target("mylib", "mylib:make", "mylib:read"),
        peers=["reference", "numba", "torch"],
        max_examples=5,
        expectations=list(expectations),
        report=None,
    )
    return Campaign(options, (True, ""), Path("."), records=list(records))


def test_peers_defects_are_listed_not_failing_and_own_ones_fail():
    from caiconform.pytest_plugin.summary import summary_lines
    from caiconform.pytest_plugin.verdicts import item_failures

    peer = [  # numba exports stream 0; torch reads before its v2 export's work is done
        _record("numba", "mylib", "fail", "CAI-STREAM-ZERO-FORBIDDEN", check="schema")
        for _ in range(3)
    ] + [_record("torch", "mylib", "fail", "CAI-PORT-V2-PENDING", check="streams")]
    own = [  # mylib's views export the allocation's base pointer
        _record("mylib", "reference", "fail", "CAI-PRODUCER-DESCRIBES-DATA") for _ in range(4)
    ]
    allowed = [_record("reference", "mylib", "rejected", "CAI-PORT-BYTEORDER")]
    campaign = _campaign(peer + own + allowed)
    verdict = campaign.verdict()
    assert [j.group["rule"] for j in item_failures(verdict, peer + allowed)] == []
    (failing,) = item_failures(verdict, own)
    assert failing.group["severity"] == "corrupts" and failing.group["library"] == "mylib"
    lines = summary_lines(campaign)
    assert lines[0].startswith(
        "FIX: mylib: 1 failing defect(s) (corrupts: mylib producer CAI-PRODUCER-DESCRIBES-DATA "
        "(MUST, derived, fail, 4 example(s)))"
    )
    assert "2 defect(s) of other libraries seen, not failing" in lines[0]
    at = lines.index("seen in other libraries, not failing this run: 2")
    # most severe first: numba's stream 0 breaks a MUST rule; torch's pending v2 export was read
    # unfinished only by caiconform's own reader, bounded by its PORTABILITY rule (docs/severity.md)
    assert lines[at + 1].startswith("  refuses-valid: numba producer CAI-STREAM-ZERO-FORBIDDEN")
    assert lines[at + 2].startswith("  portability: torch producer CAI-PORT-V2-PENDING")
    below = lines.index("defects of mylib below --cai-fail-on, reported, not failing: 1")
    assert "portability: mylib consumer CAI-PORT-BYTEORDER" in lines[below + 1]


def test_a_fault_on_memory_the_dict_cannot_show_is_about_the_input_never_failing():
    """A crash on a host pointer (CAI-DATA-DEVICE-ACCESSIBLE, the producer's obligation) is
    listed as information about the input; a poisoned context on a float in shape, which the
    dict shows, is the library's accepts-invalid defect (below the default threshold)."""
    from caiconform.pytest_plugin.summary import summary_lines

    host = _record(
        None,
        "mylib",
        "crash",
        None,
        check="adversarial",
        params={"rule": "CAI-DATA-DEVICE-ACCESSIBLE"},
    )
    shape = _record(
        None, "mylib", "poisoned", None, check="adversarial", params={"rule": "CAI-SHAPE-INT"}
    )
    campaign = _campaign([host, shape])
    verdict = campaign.verdict()
    assert verdict.ok and not verdict.failing
    lines = summary_lines(campaign)
    assert (
        lines[0]
        == "OK: mylib: no failing defect; 1 below --fail-on (1 accepts-invalid); 0 defect(s) of other libraries seen, not failing"
    )
    at = lines.index(
        "about the inputs (a dict breaking a rule it cannot show), no defect of mylib: 1"
    )
    assert lines[at + 1] == (
        "  about the input: given a dict that breaks CAI-DATA-DEVICE-ACCESSIBLE (MUST), the "
        "consumer mylib crashed (1 example(s))"
    )
    below = lines.index("defects of mylib below --cai-fail-on, reported, not failing: 1")
    assert lines[below + 1].startswith(
        "  accepts-invalid: given a dict that breaks CAI-SHAPE-INT (MUST, derived), the consumer "
        "mylib poisoned its CUDA context"
    )


def test_a_defect_with_no_single_culprit_on_the_librarys_pair_fails_saying_so():
    from caiconform.pytest_plugin.verdicts import describe_failures, item_failures

    crash = [_record("torch", "mylib", "crash", None, message="worker died (SIGSEGV)")]
    campaign = _campaign(crash)
    (failing,) = item_failures(campaign.verdict(), crash)
    assert failing.side == "ambiguous" and failing.group["severity"] == "crashes"
    text = describe_failures([failing], None, "mylib")
    assert "no single culprit: ambiguous: torch and mylib share the worker that died" in text


def test_factory_errors_are_the_setup_s_grouped_once_with_the_hint():
    from caiconform.pytest_plugin.schema import run_schema
    from caiconform.pytest_plugin.verdicts import only_setup, setup_errors

    def no_floats(values, layout, typestr, scenario):
        if typestr[1] == "f":
            raise ValueError("No cast function available")
        return type("E", (), {"__cuda_array_interface__": None})()

    outcome = run_schema("mylib", no_floats, "C", 30, [], (True, ""))
    setup = [r for r in outcome.records if r["outcome"] == "skip"]
    assert setup and not outcome.unexpected or all(r["rule"] for r in outcome.unexpected)
    assert {r["message"].split(": ", 1)[0] for r in setup} == {"setup"}
    (line,) = setup_errors(setup)
    assert line.startswith(f"dict-schema: ValueError for typestr kind 'f' in {len(setup)} example")
    assert "could not build the example: ValueError: No cast function available" in line
    assert only_setup(setup) and not only_setup(outcome.records)


def test_a_baselined_group_carries_the_reasons_of_the_entries_that_cover_it():
    from caiconform.pytest_plugin.verdicts import item_expected, item_failures
    from caiconform.results.expectations import parse_expectations

    own = [_record("mylib", "reference", "fail", "CAI-PRODUCER-DESCRIBES-DATA") for _ in range(2)]
    entries = parse_expectations(
        {
            "expectations": [
                {
                    "rule": "CAI-PRODUCER-DESCRIBES-DATA",
                    "producer": "mylib",
                    "reason": "views export the base pointer (mylib#7)",
                }
            ]
        },
        "baseline.yaml",
    )
    verdict = _campaign(own, entries).verdict()
    assert item_failures(verdict, own) == []
    (expected,) = item_expected(verdict, own)
    assert expected.reasons == ["views export the base pointer (mylib#7)"]
    assert verdict.headline().startswith("OK: mylib: no failing defect; 0 new since baseline")


def test_the_protocol_option_selects_the_dlpack_families(project):
    """--cai-protocol dlpack keeps only the DLPack families (agreement, of both, stays); the
    consumer direction of a DLPack family needs --cai-dlpack-consumer."""
    result = project.runpytest(
        "--cai-producer",
        "fakelib:make",
        "--cai-consumer",
        "fakelib:make",
        "--cai-protocol",
        "dlpack",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
    )
    out = result.stdout.str()
    assert "dlpack_roundtrip[fakelib->peers]" in out
    assert "dlpack_roundtrip[peers->fakelib]" not in out  # no --cai-dlpack-consumer
    assert "agreement" in out and "::roundtrip[" not in out and "dict-schema" in out


def test_exchange_source_preloads_the_peers_not_the_user(tmp_path, monkeypatch):
    """The exchange run's adapter source lets fork servers import the peers' libraries once
    (`preload`) and prepares ready a library without the version lookup (`warm`); the user's
    module, which may make a CUDA context when imported, is never preloaded (issue 43: the
    plugin's new children prepared for 0.5 s each without them)."""
    import importlib
    import sys

    from caiconform.pytest_plugin.adapter import install, uninstall
    from caiconform.pytest_plugin.targets import Target
    from caiconform.runner import libraries

    asked: list[str] = []
    monkeypatch.setattr(libraries, "preload", asked.append)
    sources = install(tmp_path, Target("mylib", producer="m:f"), ["cupy", "torch"])
    try:
        source = importlib.import_module(sources["exchange"])
        assert source.names() == ["mylib", "cupy", "torch"]
        assert source.warm is libraries.warm and source.probe is libraries.probe
        for name in source.names():
            source.preload(name)
        assert asked == ["cupy", "torch"]
    finally:
        uninstall(tmp_path)
        sys.modules.pop(sources["exchange"], None)


def _planned_campaign(tmp_path, planned):
    from caiconform.pytest_plugin.campaign import Campaign, Options
    from caiconform.pytest_plugin.targets import Target

    options = Options(Target("mylib", producer="m:f"), None, 5, [], None)
    campaign = Campaign(options, (True, ""), tmp_path)
    campaign.planned = planned
    return campaign


def test_exchange_run_begun_at_collection_is_the_one_items_read(tmp_path, monkeypatch):
    """The exchange run begins in a thread at the end of collection, beside the in-process
    dict-schema items; the items that need it wait for that one run (issue 43)."""
    import threading

    campaign = _planned_campaign(tmp_path, {"producer": ["roundtrip"]})
    ran: list[tuple[str, dict]] = []
    release = threading.Event()

    def run_exchange(wanted):
        ran.append((threading.current_thread().name, wanted))
        release.wait(5)
        return "result", {"producer": {"roundtrip/mylib/cupy"}}

    monkeypatch.setattr(campaign, "_run_exchange", run_exchange)
    campaign.begin_exchange()
    campaign.begin_exchange()  # once only
    release.set()
    assert campaign.exchange_run({"producer": ["roundtrip"]})[0] == "result"
    campaign.wait_exchange()
    assert ran == [("caiconform-exchange", {"producer": ["roundtrip"]})]


def test_exchange_run_error_of_the_background_run_is_raised_to_the_item(tmp_path, monkeypatch):
    from caiconform.errors import UsageError

    campaign = _planned_campaign(tmp_path, {"consumer": ["streams"]})

    def run_exchange(wanted):
        raise UsageError("no such library")

    monkeypatch.setattr(campaign, "_run_exchange", run_exchange)
    campaign.begin_exchange()
    campaign.wait_exchange()
    with pytest.raises(UsageError, match="no such library"):
        campaign.exchange_run({"consumer": ["streams"]})


def test_no_exchange_run_begins_without_a_gpu_or_a_plan(tmp_path):
    campaign = _planned_campaign(tmp_path, {})
    campaign.begin_exchange()
    assert campaign._background is None
    campaign = _planned_campaign(tmp_path, {"producer": ["roundtrip"]})
    campaign.gpu = (False, "no driver")
    campaign.begin_exchange()
    assert campaign._background is None
