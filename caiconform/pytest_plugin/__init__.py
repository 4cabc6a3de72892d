"""caiconform's pytest plugin (entry point `pytest11`): conformance items for a library's own CI.

`pytest --cai-producer mylib.testing:make_array` adds items that check the factory's exports
(`dict-schema[<layout kind>]`, no GPU needed when the factory runs without one) and, on a GPU
machine, exchange with every other available library through caiconform's isolated runner (one
item per check family and direction, e.g. `roundtrip[mylib->peers]`). `--cai-consumer` does the
same for the library's import path. Projects also get the `cai_validate` and `cai_roundtrip`
fixtures and the `cai` marker. See docs/ci.md.

Without `--cai-producer`/`--cai-consumer` the plugin only defines its options, marker and
fixtures: no caiconform module beyond this one is imported and no hook does any work.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

__all__ = ["cai_validate", "cai_roundtrip"]

_KEY = pytest.StashKey[Any]()


# --- options --------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    from caiconform.spec.protocols import NAMES

    group = parser.getgroup("caiconform", "CUDA Array Interface conformance (caiconform)")
    group.addoption(
        "--cai-producer",
        metavar="MODULE:FACTORY",
        help="test this producer: factory(values, layout, typestr, stream_scenario) -> object "
        "exposing __cuda_array_interface__",
    )
    group.addoption(
        "--cai-consumer",
        metavar="MODULE:FUNCTION",
        help="test this consumer: function(obj) -> numpy array of the values it read",
    )
    group.addoption(
        "--cai-dlpack-consumer",
        metavar="MODULE:FUNCTION",
        help="test this DLPack consumer too: function(obj) -> numpy array of the values it "
        "imported through obj.__dlpack__ (the DLPack families)",
    )
    group.addoption(
        "--cai-from-dlpack",
        metavar="MODULE:FUNCTION",
        help="with --cai-dlpack-consumer: your from_dlpack with its keywords, "
        "function(obj, *, copy=None, device=None) -> your library's array (device: a DLPack "
        "(type, id) tuple, named your way); its values are read back through its __dlpack__ "
        "(dlpack_consumer's copy case: copy=True must copy, copy=False must not)",
    )
    group.addoption(
        "--cai-protocol",
        choices=(*NAMES, "all", "both"),
        default="both",
        help=f"the protocol whose check families run: {', '.join(NAMES)}, or all of them "
        "(all, both: the default); a producer whose objects lack a protocol's export "
        "(__dlpack__) is skipped by that protocol's families",
    )
    group.addoption(
        "--cai-against",
        metavar="LIBS",
        help="comma-separated adapter names to exchange with (default: every adapter; those "
        "not installed are skipped with the reason)",
    )
    group.addoption(
        "--cai-max-examples",
        metavar="N",
        type=int,
        default=None,
        help="hypothesis examples per check (default 25)",
    )
    group.addoption(
        "--cai-expectations",
        metavar="FILE",
        help="expectation file (YAML/TOML) of known failures; see docs/expectations.md",
    )
    group.addoption(
        "--cai-report",
        metavar="DIR",
        help="write the run directories and the report (index.html, matrix.md, matrix.json) here",
    )
    group.addoption(
        "--cai-fail-on",
        metavar="SEVERITIES",
        help="comma-separated severities of the library's own defects that fail an item "
        "(default: corrupts,crashes,refuses-valid; departs, accepts-invalid and portability "
        "are reported, not failing; 'all' or 'none'); see docs/severity.md",
    )
    group.addoption(
        "--cai-write-baseline",
        metavar="FILE",
        help="write the library's own finding groups at or above --cai-fail-on as a strict "
        "expectation file (YAML) at the end of the session; pass it as --cai-expectations on "
        "later runs so that only new defects fail",
    )
    group.addoption(
        "--cai-seed",
        metavar="N",
        type=int,
        default=0,
        help="seed of the examples (default 0: the same examples on every run)",
    )
    group.addoption(
        "--cai-name",
        metavar="NAME",
        help="the name of the library under test in records and expectation files (default: "
        "the top-level package of --cai-producer/--cai-consumer)",
    )


def _active(config: pytest.Config) -> bool:
    return bool(
        config.getoption("cai_producer")
        or config.getoption("cai_consumer")
        or config.getoption("cai_dlpack_consumer")
        or config.getoption("cai_from_dlpack")  # alone: a usage error, said by `_options`
    )


def _options(config: pytest.Config) -> Any:
    """Check every option up front; a bad one is a usage error with one clear line."""
    from caiconform.adapters import registry
    from caiconform.pytest_plugin.campaign import DEFAULT_MAX_EXAMPLES, Options
    from caiconform.pytest_plugin.targets import Target, TargetError, default_name, parse_spec
    from caiconform.results.expectations import ExpectationError, load_expectations

    try:
        producer = config.getoption("cai_producer")
        consumer = config.getoption("cai_consumer")
        if producer:
            parse_spec("--cai-producer", producer)
        if consumer:
            parse_spec("--cai-consumer", consumer)
        dlpack_consumer = config.getoption("cai_dlpack_consumer")
        if dlpack_consumer:
            parse_spec("--cai-dlpack-consumer", dlpack_consumer)
        from_dlpack = config.getoption("cai_from_dlpack")
        if from_dlpack:
            parse_spec("--cai-from-dlpack", from_dlpack)
    except TargetError as exc:
        raise pytest.UsageError(str(exc)) from None
    if from_dlpack and not dlpack_consumer:
        raise pytest.UsageError(
            "--cai-from-dlpack needs --cai-dlpack-consumer: the DLPack families judge the "
            "consumer that option names, and the copy case is one of its cases"
        )
    if config.getoption("numprocesses", default=None) not in (None, 0):
        raise pytest.UsageError(
            "--cai-producer/--cai-consumer cannot be combined with pytest-xdist's -n: the runner "
            "already exchanges in parallel worker processes; run the cai items without -n"
        )
    name = config.getoption("cai_name") or default_name(producer or consumer or dlpack_consumer)
    if name in registry.BUILTIN:
        name = f"{name}-under-test"  # a built-in adapter of the same name would shadow it
    peers = config.getoption("cai_against")
    if peers is not None:
        peers = [p.strip() for p in peers.split(",") if p.strip()]
        unknown = [p for p in peers if p not in registry.names()]
        if unknown:
            raise pytest.UsageError(
                f"--cai-against: unknown adapter {unknown[0]!r} "
                f"(known: {', '.join(registry.names())})"
            )
    max_examples = config.getoption("cai_max_examples")
    if max_examples is None:
        max_examples = DEFAULT_MAX_EXAMPLES
    elif max_examples < 1:
        raise pytest.UsageError(f"--cai-max-examples: must be >= 1, got {max_examples}")
    expectations = []
    if config.getoption("cai_expectations"):
        try:
            expectations = load_expectations(config.getoption("cai_expectations"))
        except ExpectationError as exc:
            raise pytest.UsageError(f"--cai-expectations: {exc}") from None
    report = config.getoption("cai_report")
    from caiconform.results.severity import DEFAULT_FAIL_ON, parse_severities

    fail_on = DEFAULT_FAIL_ON
    if config.getoption("cai_fail_on") is not None:
        try:
            fail_on = parse_severities(config.getoption("cai_fail_on"), "--cai-fail-on")
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    baseline = config.getoption("cai_write_baseline")
    if baseline and Path(baseline).suffix.lower() not in (".yaml", ".yml"):
        raise pytest.UsageError(
            f"--cai-write-baseline {baseline}: a baseline is written as YAML (.yaml or .yml)"
        )
    return Options(
        target=Target(name, producer, consumer, dlpack_consumer, from_dlpack),
        peers=peers,
        max_examples=max_examples,
        expectations=expectations,
        report=Path(report) if report else None,
        fail_on=fail_on,
        write_baseline=Path(baseline) if baseline else None,
        seed=config.getoption("cai_seed"),
        protocol=config.getoption("cai_protocol") or "both",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cai: a CUDA Array Interface conformance test (caiconform pytest plugin)"
    )
    if not _active(config):
        return
    from caiconform.cuda import gpu_available
    from caiconform.pytest_plugin.campaign import Campaign

    config.stash[_KEY] = Campaign.start(_options(config), gpu_available())


def pytest_unconfigure(config: pytest.Config) -> None:
    campaign = config.stash.get(_KEY, None)
    if campaign is not None:
        campaign.close()


# --- items ----------------------------------------------------------------------------------


class CaiFailure(Exception):
    """A conformance failure; its message is the whole report (no traceback is useful)."""


class CaiItem(pytest.Item):
    """Base of the generated items: plain-message failures, marked `cai`."""

    def repr_failure(self, excinfo, style=None):  # type: ignore[override]
        if excinfo.errisinstance(CaiFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):  # type: ignore[override]
        return self.path, None, f"caiconform: {self.name}"

    @property
    def campaign(self) -> Any:
        return self.config.stash[_KEY]

    def skip(self, reason: str) -> None:
        """Skip this item, remembering why for the terminal summary."""
        self.campaign.skipped_items.append((self.name, reason))
        pytest.skip(reason)


class SchemaItem(CaiItem):
    """The factory's exports of one layout kind, judged by the validator (in process)."""

    def __init__(self, *, kind: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = kind

    def runtest(self) -> None:
        from caiconform.pytest_plugin.schema import FactoryNeedsGPU, describe, run_schema
        from caiconform.pytest_plugin.targets import TargetError, resolve
        from caiconform.pytest_plugin.verdicts import describe_failures, item_failures

        campaign = self.campaign
        options = campaign.options
        try:
            factory = resolve(options.target.producer)
        except TargetError as exc:
            raise CaiFailure(str(exc)) from None
        try:
            outcome = run_schema(
                options.target.name,
                factory,
                self.kind,
                options.max_examples,
                options.expectations,
                campaign.gpu,
            )
        except FactoryNeedsGPU as exc:
            self.skip(str(exc))
        campaign.records.extend(outcome.records)
        campaign.warnings.setdefault(self.name, set()).update(outcome.warnings)
        failures = item_failures(campaign.verdict(), outcome.records)
        if failures:
            failing = {id(r) for j in failures for r in j.records}
            shown = [r for r in outcome.unexpected if id(r) in failing]
            raise CaiFailure(
                describe_failures(failures, None, options.target.name)
                + "\n"
                + describe(shown or [j.records[0] for j in failures])
            )
        _judge_setup(self, outcome.records)
        if len(outcome.skips) == len(outcome.records):
            reasons = "; ".join(r for r, _ in Counter(outcome.skips).most_common(3))
            self.skip(f"the factory skipped every example: {reasons}")
        if outcome.expected:
            reasons = sorted({entry.reason for _, entry in outcome.expected})
            pytest.xfail(f"expected ({len(outcome.expected)} example(s)): {'; '.join(reasons)}")


def _judge_setup(item: CaiItem, records: list[dict[str, Any]]) -> None:
    """Fail an item whose examples were all factory failures: nothing was tested, and the
    test setup (not either library) is what to fix."""
    from caiconform.pytest_plugin.verdicts import SETUP_HINT, only_setup, setup_errors

    if only_setup(records):
        lines = setup_errors(records)
        raise CaiFailure(
            f"the factory could not build any example ({SETUP_HINT}):\n  " + "\n  ".join(lines)
        )


class ExchangeItem(CaiItem):
    """One runner check family in one direction: the user's library against its peers."""

    def __init__(self, *, family: str, direction: str, families: list[str], **kwargs: Any):
        super().__init__(**kwargs)
        self.family = family
        self.direction = direction
        self.families = families

    def runtest(self) -> None:
        from caiconform.errors import UsageError
        from caiconform.pytest_plugin.verdicts import (
            describe_failures,
            item_expected,
            item_failures,
        )

        campaign = self.campaign
        unjudged = campaign.unjudged(self.family, self.direction)
        if unjudged:  # said first: with a GPU as without, the family would not judge it
            self.skip(unjudged)
        if not campaign.gpu[0]:
            self.skip(f"exchanges with other libraries need a GPU: {campaign.gpu[1]}")
        try:
            result = campaign.run_direction(self.direction, self.families)
        except UsageError as exc:
            raise CaiFailure(f"the runner refused the run: {exc}") from None
        records = [r for r in result.records if r["check"] == self.family and not r.get("shrunk")]
        if not records:
            self.skip(f"no {self.family} cell involves the library in this direction")
        verdict = campaign.verdict()
        failures = item_failures(verdict, records)
        if failures:
            campaign.keep = True  # the reproducers the message points at must survive
            raise CaiFailure(
                describe_failures(failures, result.run_dir, campaign.options.target.name)
            )
        _judge_setup(self, records)
        if all(r.get("outcome") == "skip" for r in records):
            reasons = Counter(r.get("message") or "" for r in records)
            self.skip("; ".join(reason for reason, _ in reasons.most_common(3)))
        expected = item_expected(verdict, records)
        if expected:
            reasons = sorted({reason for j in expected for reason in j.reasons})
            pytest.xfail(f"expected ({len(expected)} group(s)): {'; '.join(reasons)}")


def _items(session: pytest.Session, campaign: Any) -> list[pytest.Item]:
    from caiconform.pytest_plugin.campaign import directions_of, family_roles
    from caiconform.pytest_plugin.schema import LAYOUT_KINDS

    target = campaign.options.target
    collector = CaiCollector.from_parent(session, name="caiconform", nodeid="caiconform")
    items: list[pytest.Item] = []
    if target.producer:
        for kind in LAYOUT_KINDS:
            items.append(SchemaItem.from_parent(collector, name=f"dict-schema[{kind}]", kind=kind))
    families = family_roles(campaign.options.protocol)
    campaign.family_protocols.update((family.name, family.protocols) for family in families)
    by_direction: dict[str, list[str]] = {"producer": [], "consumer": []}
    for family in families:
        for direction in directions_of(family.roles or "", target, family.protocols):
            by_direction[direction].append(family.name)
    for family in families:
        if family.roles is None:
            items.append(
                BrokenFamilyItem.from_parent(collector, name=family.name, error=family.error)
            )
            continue
        for direction in directions_of(family.roles, target, family.protocols):
            side = f"{target.name}->peers" if direction == "producer" else f"peers->{target.name}"
            if family.roles != "pair":
                side = target.name
            items.append(
                ExchangeItem.from_parent(
                    collector,
                    name=f"{family.name}[{side}]",
                    family=family.name,
                    direction=direction,
                    families=by_direction[direction],
                )
            )
    for item in items:
        item.add_marker(pytest.mark.cai)
    return items


class BrokenFamilyItem(CaiItem):
    """A check family that could not be imported: an error the project's CI should see."""

    def __init__(self, *, error: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise CaiFailure(f"check family {self.name} cannot be imported: {self.error}")


class CaiCollector(pytest.Collector):
    """Parent node of the generated items (node IDs `caiconform::<item>`)."""

    def collect(self):  # type: ignore[override]
        return []


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    campaign = config.stash.get(_KEY, None)
    if campaign is not None:
        items.extend(_items(session, campaign))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Run only the families whose items survived selection (`-k`, `-m`): the session's one
    exchange run covers exactly the selected items of each direction."""
    campaign = session.config.stash.get(_KEY, None)
    if campaign is None:
        return
    selected: dict[str, list[str]] = {}
    for item in session.items:
        if isinstance(item, ExchangeItem):
            selected.setdefault(item.direction, []).append(item.family)
    for item in session.items:
        if isinstance(item, ExchangeItem):
            item.families = selected[item.direction]
    campaign.planned = selected
    if not session.config.option.collectonly:
        campaign.begin_exchange()


# --- end of session -------------------------------------------------------------------------


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    campaign = session.config.stash.get(_KEY, None)
    if campaign is None:
        return
    from caiconform.pytest_plugin.schema import FAMILY

    if exitstatus != pytest.ExitCode.INTERRUPTED:  # Ctrl-C: the process leaves the run
        campaign.wait_exchange()  # a session stopped early (-x) still reports the run it began
    if campaign.options.report is not None:
        campaign.write_local_run([r for r in campaign.records if r["check"] == FAMILY])
        campaign.report_path = campaign.write_report()
    if campaign.options.write_baseline is not None:
        campaign.baseline_written = campaign.write_baseline(campaign.options.write_baseline)
    from caiconform.results.expectations import wildcard_match
    from caiconform.results.verdict import names_a_check

    ran = {record["check"] for record in campaign.records}
    for status in campaign.application().entry_errors:
        # an entry about checks that did not run here (deselected, or no GPU) is not stale;
        # one naming no check caiconform knows is a typo
        if (
            status.status == "unmatched"
            and not any(wildcard_match(c, status.entry.check) for c in ran)
            and names_a_check(status.entry.check, ran)
        ):
            campaign.entry_notes.append(
                f"note: {status.entry.label}: not judged, its check did not run in this session"
            )
        else:
            campaign.entry_errors.append(status)
    from caiconform.report.runstate import first_line, state_of, status_of

    states = [state_of(directory) for directory in campaign.run_dirs]
    if states and status_of(states) == "incomplete":
        campaign.incomplete = first_line(states)
    failed = campaign.entry_errors or campaign.incomplete
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    campaign = config.stash.get(_KEY, None)
    if campaign is None:
        return
    from caiconform.pytest_plugin.summary import summary_lines

    terminalreporter.write_sep("=", "caiconform")
    for line in summary_lines(campaign):
        terminalreporter.write_line(line)


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture
def cai_validate():
    """`cai_validate(obj, version=None)`: fail the test unless `obj` exports a conforming
    `__cuda_array_interface__`; the message lists each broken rule ID with seen vs expected.
    Returns the validator's Report."""
    from caiconform.pytest_plugin.fixtures import assert_conforms

    return assert_conforms


@pytest.fixture
def cai_roundtrip():
    """`cai_roundtrip(obj, consumer="reference", expected=None)`: validate `obj`, import it
    with `consumer` (an adapter name or a function), check what was read, return the host
    values. Skips without a GPU."""
    from caiconform.pytest_plugin.fixtures import roundtrip

    return roundtrip
