"""The conformance suites: one pytest item per check family and library cell
(`test_family[roundtrip:cupy->torch]`), every family of the family catalogue.

Each family runs once per session through caiconform's runner (`run_matrix`): hypothesis draws
the examples here, isolated worker processes do the exchanges, crashes, hangs and poisoned
contexts are classified, failures are shrunk and get a reproducer script. The run's records
are judged once, by the verdict `caiconform run`, `report` and the pytest plugin give
(`caiconform.results.verdict`, every library judged): each finding group has a severity
(`caiconform.results.severity`) and a culprit. An item then judges its cell:

- a failing group with an example in the cell fails the item: its severity is in
  --suite-fail-on (default corrupts, crashes, refuses-valid, accepts-invalid); the message gives
  per group the severity, rule, culprit, minimal example and its reproducer;
- every other group with an example in the cell (below the threshold, information about the
  input, caiconform's own harness) is a warning;
- a cell with no example that ran is skipped with the runner's reason (library not installed,
  no GPU, capability absent).

The cells are those the runner plans (`caiconform.runner.plan.plan_cells`) over the adapters'
declared capabilities.

Without a GPU every family but schema's CPU part (`synthetic` dicts) skips at once, saying so.

Options: --suite-max-examples N (default 25), --suite-libraries a,b,... (default: every
adapter), --suite-out DIR (run directories; default a pytest temporary directory),
--suite-workers N (default 2), --suite-timeout S (per example, default 60),
--suite-shrink-budget S (per failure class and cell, default 30; 0: no shrinking),
--suite-fail-on SEVERITIES (comma-separated, 'all' or 'none'). All the
session's GPU families run in one runner call, so each library is imported once per worker.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

import pytest

SYNTHETIC = "synthetic"
#: the severities that fail an item unless --suite-fail-on says otherwise: the default of
#: `caiconform run` and an accepted invalid dict, which a conformance suite holds a consumer to
SUITE_FAIL_ON = "corrupts,crashes,refuses-valid,accepts-invalid"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("caiconform-suites", "caiconform conformance suites")
    group.addoption(
        "--suite-max-examples",
        type=int,
        default=25,
        metavar="N",
        help="hypothesis examples per cell (default 25)",
    )
    group.addoption(
        "--suite-libraries",
        default=None,
        metavar="LIBS",
        help="comma-separated adapter names (default: every adapter)",
    )
    group.addoption(
        "--suite-out",
        default=None,
        metavar="DIR",
        help="where the run directories go (default: a pytest temporary directory)",
    )
    group.addoption(
        "--suite-workers",
        type=int,
        default=2,
        metavar="N",
        help="worker processes per family run (default 2)",
    )
    group.addoption(
        "--suite-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds one example may take before it counts as a hang (default 60)",
    )
    group.addoption(
        "--suite-shrink-budget",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds of shrinking per failure class and cell; 0 turns shrinking off (default 30)",
    )
    group.addoption(
        "--suite-fail-on",
        default=SUITE_FAIL_ON,
        metavar="SEVERITIES",
        help=f"comma-separated severities that fail an item, 'all' or 'none' (default {SUITE_FAIL_ON})",
    )


def _libraries(config: pytest.Config) -> list[str]:
    from caiconform.adapters import registry

    chosen = config.getoption("suite_libraries")
    if chosen is None:
        return registry.names()
    names = [n.strip() for n in chosen.split(",") if n.strip()]
    unknown = [n for n in names if n not in registry.names()]
    if unknown:
        raise pytest.UsageError(
            f"--suite-libraries: unknown adapter {unknown[0]!r} "
            f"(known: {', '.join(registry.names())})"
        )
    return names


def cells_for(family: str, libraries: list[str]) -> list[tuple[str | None, str | None]]:
    """(producer, consumer) cells of `family` over `libraries`, as the runner plans them from
    the adapters' declared capabilities (reading them imports no array library), whether or not
    they can run here."""
    from caiconform.adapters import registry
    from caiconform.runner.libraries import LibraryInfo
    from caiconform.runner.plan import load_families, plan_cells

    families, broken = load_families([family])
    if broken:
        raise pytest.UsageError(broken[0].reason)
    infos = {
        name: LibraryInfo(name, True, capabilities=frozenset(registry.get(name).capabilities))
        for name in libraries
    }
    runnable, skipped = plan_cells(families, infos, gpu_count=0)
    cells = [*runnable, *(cell for cell, _ in skipped)]
    order = {name: i for i, name in enumerate(libraries)}
    return sorted(
        ((cell.producer, cell.consumer) for cell in cells),
        key=lambda c: tuple(-1 if name is None else order[name] for name in c),
    )


def cell_id(cell: tuple[str | None, str | None]) -> str:
    producer, consumer = cell
    if producer and consumer:
        return f"{producer}->{consumer}"
    return producer or consumer or "-"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `family_cell` over every family of the catalogue and its cells, and
    `synthetic_cell` for schema on CPU."""
    if "family_cell" in metafunc.fixturenames:
        from caiconform.spec.families import FAMILIES

        libraries = _libraries(metafunc.config)
        params = [(family, cell) for family in FAMILIES for cell in cells_for(family, libraries)]
        metafunc.parametrize(
            "family_cell", params, ids=[f"{family}:{cell_id(cell)}" for family, cell in params]
        )
    if "synthetic_cell" in metafunc.fixturenames:
        metafunc.parametrize("synthetic_cell", [(SYNTHETIC, None)], ids=[SYNTHETIC])


def _family_of(item: pytest.Item) -> str | None:
    """The family an item judges: its `family_cell` parameter's, else its module's FAMILY."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "family_cell" in callspec.params:
        return callspec.params["family_cell"][0]
    return getattr(getattr(item, "module", None), "FAMILY", None)


def judge_cell(verdict: Any, records: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(failing groups, listed groups) of the run's `verdict` with an example among `records`
    (one cell's): a failing group fails the item, a listed one (below the threshold, about the
    input, the harness's own) is a warning."""
    from caiconform.pytest_plugin.verdicts import item_failures

    failing = item_failures(verdict, records)
    ids = {id(r) for r in records}
    listed = [
        j
        for j in verdict.judged
        if not j.failing and j.status != "expected" and any(id(r) in ids for r in j.records)
    ]
    return failing, listed


class Suite:
    """Runs the session's families through the runner once (all families in one run, so the
    libraries are probed and imported once) and judges cells from the journal."""

    def __init__(
        self, config: pytest.Config, out: Path, families: list[str], fail_on: frozenset[str]
    ) -> None:
        self.config = config
        self.out = out
        self.families = families
        self.fail_on = fail_on

    @functools.cache  # noqa: B019 -- one Suite per session; the cache is the point
    def verdict(self, synthetic: bool) -> Any:
        """The verdict on the run's records, every library judged at `fail_on`."""
        from caiconform.results.verdict import judge

        return judge(self.run(synthetic).records, fail_on=self.fail_on)

    @functools.cache  # noqa: B019 -- one Suite per session; the cache is the point
    def run(self, synthetic: bool) -> Any:
        from caiconform.checks import load
        from caiconform.runner.config import RunConfig
        from caiconform.runner.driver import run_matrix

        if synthetic:
            libraries, source = [SYNTHETIC], "caiconform.checks.synthetic_source"
            checks = ["schema"]
        else:
            libraries, source = _libraries(self.config), "caiconform.runner.libraries"
            checks = [f for f in self.families if load(f).NEEDS_GPU]
        budget = self.config.getoption("suite_shrink_budget")
        return run_matrix(
            RunConfig(
                out=self.out / ("synthetic" if synthetic else "libraries"),
                checks=checks,
                libraries=libraries,
                max_examples=self.config.getoption("suite_max_examples"),
                workers=self.config.getoption("suite_workers"),
                timeout_s=self.config.getoption("suite_timeout"),
                seed=0,
                shrink=budget > 0,
                shrink_budget_s=budget,
                adapter_source=source,
            )
        )

    def check(self, family: str, cell: tuple[str | None, str | None]) -> None:
        """Fail, warn or skip the item of `cell` by its journal records."""
        __tracebackhide__ = True
        from caiconform.checks import load

        synthetic = cell[0] == SYNTHETIC
        if load(family).NEEDS_GPU and not synthetic:
            from caiconform.cuda import gpu_available

            ok, why = gpu_available()
            if not ok:
                pytest.skip(f"{family} needs a GPU: {why}")
        result = self.run(synthetic)
        producer, consumer = cell
        records = [
            r
            for r in result.records
            if r.get("check") == family
            and r.get("producer") == producer
            and r.get("consumer") == consumer
        ]
        ran = [r for r in records if r["outcome"] != "skip"]
        if not ran:
            reasons = sorted({r["message"] for r in records}) or ["the runner ran no example"]
            pytest.skip(f"{family} {cell_id(cell)}: {'; '.join(reasons)[:300]}")
        from caiconform.pytest_plugin.verdicts import describe_failures
        from caiconform.results.verdict import group_line
        from caiconform.spec.families import entry

        failing, listed = judge_cell(self.verdict(synthetic), records)
        for judged in listed:
            warnings.warn(f"{judged.status}: {group_line(judged.group)}", stacklevel=1)
        if failing:
            judges = entry(family)
            pytest.fail(
                f"{family} {cell_id(cell)}: {len(ran)} examples "
                f"(journal {result.run_dir / 'results.jsonl'}):\n"
                + (f"  it judges {judges.judges}\n" if judges else "")
                + describe_failures(failing, result.run_dir, cell_id(cell)),
                pytrace=False,
            )


@pytest.fixture(scope="session")
def suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Suite:
    chosen = request.config.getoption("suite_out")
    out = Path(chosen) if chosen else tmp_path_factory.mktemp("suites")
    families = {_family_of(item) for item in request.session.items}
    from caiconform.results.severity import parse_severities
    from caiconform.spec.families import FAMILIES

    try:
        fail_on = parse_severities(request.config.getoption("suite_fail_on"), "--suite-fail-on")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return Suite(request.config, out, [f for f in FAMILIES if f in families], fail_on)
