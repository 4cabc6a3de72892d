"""The conformance suites: one pytest item per check family and library cell (`cupy->torch`).

Each family runs once per session through caiconform's runner (`run_matrix`): hypothesis draws
the examples here, isolated worker processes do the exchanges, crashes, hangs and poisoned
contexts are classified, failures are shrunk and get a reproducer script. The items then judge
their cell's journal records:

- a problem fails the item: `fail` on a MUST rule, `accepted-invalid`, `crash`, `hang`,
  `poisoned`, and `rejected` where refusing was not the right answer (valid input refused for
  no portability reason, or a check error); the message shows the rule ID, seen vs expected and
  the reproducer path, smallest (shrunk) example first;
- `fail` on a SHOULD rule is a warning, as in the EMM suite;
- a cell with no example that ran is skipped with the runner's reason (library not installed,
  no GPU, capability absent).

Without a GPU every family but schema's CPU part (`synthetic` dicts) skips at once, saying so.

Options: --suite-max-examples N (default 25), --suite-libraries a,b,... (default: every
adapter), --suite-out DIR (run directories; default a pytest temporary directory),
--suite-workers N (default 2), --suite-timeout S (per example, default 60),
--suite-shrink-budget S (per failure class and cell, default 30; 0: no shrinking). All the
session's GPU families run in one runner call, so each library is imported once per worker.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

import pytest

SYNTHETIC = "synthetic"
PROBLEMS = frozenset({"fail", "accepted-invalid", "crash", "hang", "poisoned"})
_SHOWN = 5


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
    """(producer, consumer) cells of `family` over `libraries`, by the adapters' declared
    capabilities (reading them imports no array library)."""
    from caiconform.adapters import registry
    from caiconform.checks import load

    roles = load(family).ROLES
    caps = {name: registry.get(name).capabilities for name in libraries}
    producers = [n for n in libraries if "produce" in caps[n]]
    consumers = [n for n in libraries if "consume" in caps[n]]
    if roles == "pair":
        return [(p, c) for p in producers for c in consumers]
    if roles == "producer":
        return [(p, None) for p in producers]
    return [(None, c) for c in consumers]


def cell_id(cell: tuple[str | None, str | None]) -> str:
    producer, consumer = cell
    if producer and consumer:
        return f"{producer}->{consumer}"
    return producer or consumer or "-"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `cell` over the module's FAMILY (and `synthetic_cell` for schema on CPU)."""
    family = getattr(metafunc.module, "FAMILY", None)
    if family is None:
        return
    if "cell" in metafunc.fixturenames:
        cells = cells_for(family, _libraries(metafunc.config))
        metafunc.parametrize("cell", cells, ids=[cell_id(c) for c in cells])
    if "synthetic_cell" in metafunc.fixturenames:
        metafunc.parametrize("synthetic_cell", [(SYNTHETIC, None)], ids=[SYNTHETIC])


def is_problem(record: dict[str, Any]) -> bool:
    """Whether a journal record fails its item (see the module docstring)."""
    from caiconform.results.record import EXPECT_REJECTION
    from caiconform.spec.rules import RULES, Level

    rule = RULES.get(record.get("rule") or "")
    outcome = record["outcome"]
    if outcome == "fail":
        return rule is None or rule.level is not Level.SHOULD
    if outcome in PROBLEMS:
        return True
    if outcome == "rejected":
        if record.get("expected") == EXPECT_REJECTION:
            return False
        return rule is None or rule.level is not Level.PORTABILITY
    return False


def describe(record: dict[str, Any], run_dir: Path) -> str:
    """One problem, for a failure message: outcome, rule, message, seen/expected, reproducer."""
    lines = [f"{record['outcome']} [{record.get('rule') or 'no rule'}]: {record['message']}"]
    if record.get("seen") is not None or record.get("expected") is not None:
        lines.append(f"    seen: {record.get('seen')}")
        lines.append(f"    expected: {record.get('expected')}")
    if record.get("repro"):
        lines.append(f"    reproducer: {run_dir / record['repro']}")
    return "\n".join(lines)


class Suite:
    """Runs the session's families through the runner once (all families in one run, so the
    libraries are probed and imported once) and judges cells from the journal."""

    def __init__(self, config: pytest.Config, out: Path, families: list[str]) -> None:
        self.config = config
        self.out = out
        self.families = families

    @functools.cache  # noqa: B019 -- one Suite per session; the cache is the point
    def run(self, synthetic: bool) -> Any:
        from caiconform.checks import load
        from caiconform.runner.driver import RunConfig, run_matrix

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
        problems = sorted(
            (r for r in records if is_problem(r)),
            key=lambda r: (not r.get("shrunk"), r.get("seq", 0)),
        )
        for record in records:
            if record["outcome"] == "fail" and not is_problem(record):
                warnings.warn(describe(record, result.run_dir), stacklevel=1)
        if problems:
            shown = "\n".join(describe(r, result.run_dir) for r in problems[:_SHOWN])
            more = f"\n(+{len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
            pytest.fail(
                f"{family} {cell_id(cell)}: {len(problems)} problem(s) in {len(ran)} examples "
                f"(journal {result.run_dir / 'results.jsonl'}):\n{shown}{more}",
                pytrace=False,
            )


@pytest.fixture(scope="session")
def suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Suite:
    chosen = request.config.getoption("suite_out")
    out = Path(chosen) if chosen else tmp_path_factory.mktemp("suites")
    families = {getattr(item.module, "FAMILY", None) for item in request.session.items}
    from caiconform.checks import FAMILIES

    return Suite(request.config, out, [f for f in FAMILIES if f in families])
