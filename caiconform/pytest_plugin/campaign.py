"""The plugin's session state: the options, the GPU answer, the records of every check, and the
runner runs that exchange the user's library with its peers.

The directions (the user's factory against the peers' consumers, the peers' producers against
the user's consumer) the selected items ask for are one `run_matrix` call, the exchange run,
begun in a thread of its own at the end of collection (`begin_exchange`), so that its start and
cells overlap the in-process dict-schema items; each item waits for it and reads its family's
records. The run writes an ordinary run directory, so `--cai-report` merges it with the
dict-schema records into one report.

The factory is a CAI producer (`--cai-producer`); the families of another protocol (the family
catalogue's, `caiconform.spec.protocols`: DLPack's, agreement included) judge it only when its
objects expose that protocol's export (`__dlpack__`): the factory is asked for one sample array
(`targets.sample_exports`) and, when that object lacks it, those families' producer items skip
with one reason and are left out of the run (`Campaign.unjudged`). A family's consumer items
call the user's consumer over the family's protocol (`Protocol.plugin_consumer`).
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from caiconform.pytest_plugin.targets import Sample, Target
from caiconform.results.expectations import (
    Application,
    Expectation,
    apply_expectations,
    installed_version,
)
from caiconform.results.record import cell_key
from caiconform.results.severity import DEFAULT_FAIL_ON
from caiconform.rundir import RunDir

__all__ = ["Options", "Campaign", "FamilyInfo", "family_roles", "DEFAULT_MAX_EXAMPLES"]

DEFAULT_MAX_EXAMPLES = 25


@dataclass(frozen=True)
class Options:
    """The plugin's command-line options, checked."""

    target: Target
    peers: list[str] | None
    max_examples: int
    expectations: list[Expectation]
    report: Path | None
    #: severities of the library's own defects that fail an item (`caiconform.results.severity`)
    fail_on: frozenset[str] = DEFAULT_FAIL_ON
    #: where to write the baseline at the end of the session, if anywhere
    write_baseline: Path | None = None
    #: the examples' seed: the same examples on every run unless changed
    seed: int = 0
    #: the protocols whose families run (`--cai-protocol`, read by `spec.protocols.parse`)
    protocol: str = "both"


@dataclass(frozen=True)
class FamilyInfo:
    """A runner check family as the plugin needs it: its name and roles, or why it cannot be
    imported here."""

    name: str
    roles: str | None
    error: str = ""
    protocols: tuple[str, ...] = ("cai",)


def family_roles(protocol: str = "both") -> list[FamilyInfo]:
    """Every built-in family of the protocols `protocol` chooses (`spec.protocols.parse`) with
    its ROLES (importing a family module is cheap: families import GPU libraries only inside
    `execute`)."""
    from caiconform.checks import load
    from caiconform.spec.families import CATALOGUE
    from caiconform.spec.protocols import parse

    chosen = {p.name for p in parse(protocol)}
    infos = []
    for entry in CATALOGUE:
        if not chosen & set(entry.protocols):
            continue
        try:
            module = load(entry.name)
        except Exception as exc:  # a family that does not import is reported, not fatal
            infos.append(FamilyInfo(entry.name, None, f"{type(exc).__name__}: {exc}"))
            continue
        infos.append(FamilyInfo(module.FAMILY, module.ROLES, protocols=entry.protocols))
    return infos


def directions_of(roles: str, target: Target, protocols: tuple[str, ...] = ("cai",)) -> list[str]:
    """The directions in which a family with `roles` over `protocols` tests the user's library:
    its consumer items call the user's consumer over the family's (first) protocol
    (`Protocol.plugin_consumer`: `--cai-dlpack-consumer` for a DLPack-only family). Its producer
    items are made whatever the factory's objects export; they skip, saying why, when the
    objects lack the export of one of its protocols (`Campaign.unjudged`)."""
    from caiconform.spec.protocols import get

    directions = []
    if target.producer and roles in ("pair", "producer"):
        directions.append("producer")
    consumer = getattr(target, get(protocols[0]).plugin_consumer)
    if consumer and roles in ("pair", "consumer"):
        directions.append("consumer")
    return directions


def _cell_keys(family: Any, direction: str, user: str, peers: list[str]) -> list[str]:
    """The keys ("family/producer/consumer") of the cells in which `family` (a loaded
    `runner.plan.Family`) judges `user` in `direction`: a pair family's against each peer, a
    one-sided family's of the user alone when its role is the direction's."""
    if family.roles == "pair":
        if direction == "producer":
            return [f"{family.name}/{user}/{peer}" for peer in peers]
        return [f"{family.name}/{peer}/{user}" for peer in peers]
    if family.roles != direction:
        return []
    return [f"{family.name}/{user}/-" if direction == "producer" else f"{family.name}/-/{user}"]


@dataclass
class Campaign:
    """Everything the plugin keeps for one pytest session."""

    options: Options
    gpu: tuple[bool, str]
    workdir: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    warnings: dict[str, set[str]] = field(default_factory=dict)
    run_dirs: list[Path] = field(default_factory=list)
    skipped_cells: list[tuple[str, str]] = field(default_factory=list)
    skipped_items: list[tuple[str, str]] = field(default_factory=list)
    owns_workdir: bool = True
    #: set at the end of the session: the report written, strict expectation entries that failed
    report_path: Path | None = None
    entry_errors: list[Any] = field(default_factory=list)
    entry_notes: list[str] = field(default_factory=list)
    #: set at the end of the session: the INCOMPLETE line when a run's cell did not finish
    incomplete: str | None = None
    #: keep a temporary workdir after the session: it holds reproducers of failures
    keep: bool = False
    #: direction -> adapter source module, once `install` has put the user's adapter in place
    sources: dict[str, str] = field(default_factory=dict)
    #: set at the end of the session: where the baseline was written, and how many entries
    baseline_written: tuple[Path, int] | None = None
    #: family name -> the names of its protocols, for the families the session's items belong to
    family_protocols: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: direction -> the families the session's selected items judge there (the plugin's
    #: `pytest_collection_finish`): the one exchange run covers them all
    planned: dict[str, list[str]] = field(default_factory=dict)
    _verdict: tuple[int, Any] | None = None
    _sample: Sample | None = None
    _exchange: tuple[Any, dict[str, set[str]]] | None = None
    #: held while the exchange run runs: an item asking for it waits for the one under way
    _exchange_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: the exchange run begun at the end of collection (`begin_exchange`), and what it raised
    _background: threading.Thread | None = None
    _background_error: BaseException | None = None

    @classmethod
    def start(cls, options: Options, gpu: tuple[bool, str]) -> Campaign:
        if options.report is not None:
            # one directory per session, so a report directory can be reused run after run
            from caiconform.runner.journal import utc_now

            stamp = utc_now().replace(":", "").replace("-", "")
            workdir = options.report / "runs" / stamp
            try:
                workdir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise pytest.UsageError(
                    f"--cai-report: cannot create {workdir}: {exc.strerror or exc}"
                ) from None
            return cls(options, gpu, workdir, owns_workdir=False)
        return cls(options, gpu, Path(tempfile.mkdtemp(prefix="caiconform-pytest-")))

    # -- what the library claims ------------------------------------------------------------
    def producer_sample(self) -> Sample | None:
        """What the factory's objects export (`targets.sample_exports`), asked of the factory
        once; None without `--cai-producer` or when it cannot be imported (its items say so)."""
        if self._sample is None and self.options.target.producer:
            from caiconform.pytest_plugin.targets import TargetError, resolve, sample_exports

            try:
                factory = resolve(self.options.target.producer)
            except TargetError:
                return None
            self._sample = sample_exports(factory)
        return self._sample

    def unjudged(self, family: str, direction: str) -> str | None:
        """Why `family` does not judge the library in `direction`, or None when it does: the
        families of a protocol other than the CAI, the factory's own, judge the factory only
        when its objects have that protocol's export (`__dlpack__`). A factory that made no
        sample keeps its claim: the family judges it."""
        from caiconform.spec.protocols import CAI, get

        if direction != "producer":
            return None
        sample = self.producer_sample()
        if sample is None or sample.exports is None:
            return None
        for protocol in map(get, self.family_protocols.get(family, (CAI.name,))):
            if protocol is not CAI and protocol.export not in sample.exports:
                return (
                    f"{self.options.target.name}'s objects have no {protocol.export} "
                    f"({sample.description}): the {protocol.title} families judge only a "
                    "producer whose objects export it"
                )
        return None

    # -- the runner ----------------------------------------------------------------------
    def peers(self) -> list[str]:
        from caiconform.adapters import registry

        if self.options.peers is not None:
            return list(self.options.peers)
        return [name for name in registry.names() if name != self.options.target.name]

    def run_direction(self, direction: str, families: list[str]) -> Any:
        """The run's records of `families` in `direction` (a RunResult of those alone).

        Every direction is one run (`exchange_run`, made the first time an item asks): the
        directions the session's selected items ask for (`planned`, set at the end of
        collection) and this one. One run starts its workers once and runs both directions'
        cells side by side, where a run per direction paid the start twice and each run's
        slowest cell alone at its end (issue 43: the plugin's time)."""
        wanted = dict(self.planned)
        if direction not in wanted:
            wanted[direction] = list(families)
        result, keys = self.exchange_run(wanted)
        mine = keys.get(direction, set())
        view = copy.copy(result)
        view.records = [r for r in result.records if cell_key(r) in mine]
        view.skipped = [(key, why) for key, why in result.skipped if key in mine]
        return view

    def begin_exchange(self) -> None:
        """Begin the exchange run of the `planned` directions in a thread of its own, at the
        end of collection: its start and cells overlap the in-process dict-schema items,
        which ran before it (issue 43: the plugin's time). An item that needs it waits for it
        (`exchange_run`); what it raised is raised there."""
        if self._background is not None or not self.planned or not self.gpu[0]:
            return

        def run() -> None:
            try:
                self.exchange_run(dict(self.planned))
            except BaseException as exc:  # raised again by the item that asks for the run
                self._background_error = exc

        self._background = threading.Thread(target=run, name="caiconform-exchange", daemon=True)
        self._background.start()

    def wait_exchange(self) -> None:
        """Wait for a run `begin_exchange` began (the session's end: its records reported)."""
        if self._background is not None:
            self._background.join()

    def exchange_run(self, wanted: dict[str, list[str]]) -> tuple[Any, dict[str, set[str]]]:
        """(the session's one RunResult, direction -> the keys of its cells), run the first
        time over `wanted` (direction -> families): the user's library as producer against
        each peer's consumer and in the producer families, as consumer of each peer's objects
        and in the consumer families, with the families that do not judge it in a direction
        (`unjudged`) left out of that direction; never a peer against a peer, nor the library
        against itself. A run under way (`begin_exchange`) is waited for, and what it raised
        is raised again."""
        with self._exchange_lock:
            if self._exchange is None and self._background_error is not None:
                raise self._background_error
            if self._exchange is None:
                self._exchange = self._run_exchange(wanted)
            return self._exchange

    def _run_exchange(self, wanted: dict[str, list[str]]) -> tuple[Any, dict[str, set[str]]]:
        from caiconform.pytest_plugin.adapter import install
        from caiconform.runner.config import RunConfig
        from caiconform.runner.driver import run_matrix
        from caiconform.runner.plan import load_families

        if not self.sources:
            from caiconform.spec.protocols import DLPACK

            sample = self.producer_sample()
            known = sample is not None and sample.exports is not None
            self.sources = install(
                self.workdir / "adapter",
                self.options.target,
                self.peers(),
                exports_dlpack=not known or DLPACK.export in sample.exports,
            )
        user, peers = self.options.target.name, self.peers()
        checks: list[str] = []
        keys: dict[str, set[str]] = {}
        for direction, families in wanted.items():
            judged = [f for f in families if self.unjudged(f, direction) is None]
            checks.extend(f for f in judged if f not in checks)
            loaded, _ = load_families(judged)  # one that cannot import: no cells (its item says)
            keys[direction] = {
                key for family in loaded for key in _cell_keys(family, direction, user, peers)
            }
        out = self.workdir / "exchange"
        config = RunConfig(
            out=out,
            checks=checks,
            libraries=[user, *peers],
            max_examples=self.options.max_examples,
            seed=self.options.seed,  # the same examples on every CI run unless changed
            adapter_source=self.sources["exchange"],
            only_cells=sorted(set().union(*keys.values())),
        )
        result = run_matrix(config)
        self.run_dirs.append(out)
        self.records.extend(result.records)
        self.skipped_cells.extend(result.skipped)
        return result, keys

    # -- verdicts -----------------------------------------------------------------------
    def verdict(self) -> Any:
        """The verdict (`caiconform.results.verdict`) on every record so far for the library under
        test; recomputed only when records were added."""
        if self._verdict is None or self._verdict[0] != len(self.records):
            from caiconform.results.verdict import judge

            verdict = judge(
                self.records,
                library=self.options.target.name,
                fail_on=self.options.fail_on,
                expectations=self.options.expectations,
            )
            self._verdict = (len(self.records), verdict)
        return self._verdict[1]

    # -- expectations and the report -----------------------------------------------------
    def application(self) -> Application:
        return apply_expectations(
            self.options.expectations, self.records, lambda record: installed_version
        )

    def write_baseline(self, path: Path) -> tuple[Path, int]:
        """Write the library's own groups at or above --cai-fail-on (and those with no single
        culprit on its pairs) as a strict expectation file; (path, entries)."""
        from caiconform.results.baseline import BaselineError, write_baseline
        from caiconform.runner.journal import utc_now

        verdict = self.verdict()
        groups = [
            j.group
            for j in verdict.judged
            if j.side in ("own", "ambiguous") and j.status != "below"
        ]
        try:
            count = write_baseline(
                groups,
                path,
                date=utc_now()[:10],
                source=f"the pytest plugin's run of {self.options.target.name}",
                records=self.records,
            )
        except BaselineError as exc:
            raise pytest.UsageError(str(exc)) from None
        return path, count

    def write_local_run(self, records: list[dict[str, Any]]) -> Path | None:
        """Journal the in-process (dict-schema) records as a run directory of their own."""
        if not records:
            return None
        import json
        from collections import Counter

        from caiconform.env import capture
        from caiconform.results.record import cell_key
        from caiconform.runner.journal import Journal

        out = self.workdir / "local"
        journal = Journal(out, f"pytest-{self.workdir.name}")
        counts: dict[str, Counter] = {}
        for record in records:
            journal.record(record)
            counts.setdefault(cell_key(record), Counter())[record["outcome"]] += 1
        for key, outcomes in counts.items():  # every example ran: each cell is finished
            journal.cell_done(key, counts=dict(outcomes))
        journal.close()
        RunDir(out).env.write_text(json.dumps(capture(), indent=1) + "\n")
        self.run_dirs.append(out)
        return out

    def write_report(self) -> Path | None:
        """Write the merged report of every run into `--cai-report`; None without the option."""
        if self.options.report is None or not self.run_dirs:
            return None
        from caiconform.report.build import write_report

        write_report(self.run_dirs, self.options.report, self.options.expectations or None)
        return RunDir(self.options.report).index_html

    def close(self) -> None:
        from caiconform.pytest_plugin.adapter import uninstall

        if self.sources:
            uninstall(self.workdir / "adapter")
        if self.owns_workdir and not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
