"""The matrix: journal records folded into cells, scores, findings and skips (`matrix.json`).

A cell is one check family x producer x consumer, with a count per outcome. Its pass fraction is
successes over the results that were not skipped: a skip is a capability the library says it
lacks, not a verdict, so it neither helps nor hurts (a cell of skips only has no fraction), and a
success is a pass or a *correct rejection* (invalid input refused cleanly: outcome `rejected`
with the check's `expected` saying a rejection was the right answer). Findings are
the other results that are neither pass nor skip, grouped by what a maintainer would fix once: the
same rule, outcome, check and pair. The Markdown and HTML renderers read only this structure, so
`matrix.json` is the one place a report's numbers come from.
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from caiconform.report.coverage import build_coverage, planned_from_dirs, saturation_from_dirs
from caiconform.report.load import Run
from caiconform.report.migration import migration_rows
from caiconform.results.catalogue import build_catalogue
from caiconform.results.expectations import (
    Application,
    Expectation,
    env_versions,
    is_correct_rejection,
    is_finding,
    lookup_version,
)
from caiconform.results.fold import findings as findings_of
from caiconform.results.outcome import OUTCOMES, PASS, REJECTED, SKIP
from caiconform.results.record import cell_key
from caiconform.results.severity import DEFAULT_FAIL_ON, SEVERITIES
from caiconform.results.verdict import Verdict, judge
from caiconform.spec.families import FAMILIES
from caiconform.spec.rules import RULES

__all__ = [
    "SCHEMA",
    "build_matrix",
    "counted",
    "pass_fraction",
    "json_safe",
    "SEVERITY",
    "version_of",
    "verdict_json",
]

SCHEMA = "caiconform-matrix/1"

#: Findings are listed worst first: the process died, then the spec was broken, then refusals.
SEVERITY = {"crash": 0, "poisoned": 1, "hang": 2, "fail": 3, "accepted-invalid": 4, "rejected": 5}

#: Reproducer links kept per finding group (the rest are counted, not listed).
MAX_REPROS = 5


#: the pseudo-outcome under which a cell counts its correct rejections (see `_cells`)
CORRECT_REJECTION = "correct-rejection"


def pass_fraction(counts: Mapping[str, int]) -> float | None:
    """Successes (passes and correct rejections) over non-skipped results; None when
    everything was skipped. `counts` may hold `CORRECT_REJECTION` beside the outcomes."""
    tested = sum(n for outcome, n in counts.items() if outcome not in (SKIP, CORRECT_REJECTION))
    passed = counts.get(PASS, 0) + counts.get(CORRECT_REJECTION, 0)
    return passed / tested if tested else None


def json_safe(value: Any) -> Any:
    """`value` with non-finite floats (which Python's json reads but strict JSON and browsers
    reject) replaced by their names, so matrix.json and the page's embedded data always parse."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {key: json_safe(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(inner) for inner in value]
    return value


def _text(value: Any) -> str | None:
    """A journal's seen/expected values as short display strings (they may be any JSON)."""
    if value is None:
        return None
    return value if isinstance(value, str) else repr(value)


def _repro_href(run: Run, record: Mapping[str, Any], out_dir: Path) -> str | None:
    repro = record.get("repro")
    if not repro:
        return None
    base = run.dirs.get(str(record["run_id"]))
    target = Path(repro) if base is None else base / repro
    return Path(os.path.relpath(target.resolve(), out_dir.resolve())).as_posix()


def counted(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records that count: a `shrunk` record is the minimal example of an (outcome, rule)
    class its cell already counted, kept for its reproducer only."""
    return [record for record in records if not record.get("shrunk")]


def _cells(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    counts: dict[tuple[str, str | None, str | None], Counter[str]] = defaultdict(Counter)
    for record in counted(records):
        key = (str(record["check"]), record.get("producer"), record.get("consumer"))
        counts[key][record["outcome"]] += 1
        if is_correct_rejection(record):
            counts[key][CORRECT_REJECTION] += 1
    cells = []
    for (check, producer, consumer), counter in counts.items():
        total = sum(counter[o] for o in OUTCOMES)
        right = counter[CORRECT_REJECTION]
        findings = {o: counter[o] for o in OUTCOMES if o not in (PASS, SKIP) and counter[o]}
        if right:
            findings[REJECTED] -= right
            findings = {o: n for o, n in findings.items() if n}
        cells.append(
            {
                "check": check,
                "producer": producer,
                "consumer": consumer,
                "counts": {o: counter[o] for o in OUTCOMES if counter[o]},
                "correct_rejections": right,
                "findings": findings,
                "total": total,
                "tested": total - counter[SKIP],
                "passed": counter[PASS] + right,
                "pass_fraction": pass_fraction(counter),
            }
        )
    cells.sort(key=lambda c: (c["check"], c["producer"] or "", c["consumer"] or ""))
    return cells


def _families(cells: list[dict[str, Any]]) -> dict[str, dict[str, list[str | None]]]:
    families: dict[str, dict[str, list[str | None]]] = {}
    for cell in cells:
        family = families.setdefault(cell["check"], {"producers": [], "consumers": []})
        for role in ("producer", "consumer"):
            axis = family[role + "s"]
            if cell[role] not in axis:
                axis.append(cell[role])
    for family in families.values():
        for axis in family.values():
            axis.sort(key=lambda name: (name is None, name or ""))
    order = {name: i for i, name in enumerate(FAMILIES)}
    # the run's own order (cheap dict-only checks first), then any other family by name
    return dict(sorted(families.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def _scores(cells: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    tallies: dict[str, dict[str, list[int]]] = defaultdict(
        lambda: {"producer": [0, 0], "consumer": [0, 0]}
    )
    for cell in cells:
        for role in ("producer", "consumer"):
            if cell[role] is not None:
                tally = tallies[cell[role]][role]
                tally[0] += cell["passed"]
                tally[1] += cell["tested"]
    scores: dict[str, dict[str, dict[str, Any]]] = {}
    for library in sorted(tallies):
        scores[library] = {
            role: {
                "passed": passed,
                "tested": tested,
                "score": passed / tested if tested else None,
            }
            for role, (passed, tested) in tallies[library].items()
        }
    return scores


def _findings(
    run: Run, verdicts: list[tuple[Mapping[str, Any], Any]], out_dir: Path
) -> list[dict[str, Any]]:
    groups: dict[tuple, dict[str, Any]] = {}
    for record, entry in verdicts:
        if not is_finding(record):
            continue
        rule = record.get("rule")
        key = (
            record["check"],
            record.get("producer"),
            record.get("consumer"),
            record["outcome"],
            rule,
            None if entry is None else (entry.source, entry.index),
        )
        group = groups.get(key)
        if group is None:
            catalogue = RULES.get(rule) if rule else None
            group = groups[key] = {
                "rule": rule,
                "level": catalogue.level.value if catalogue else None,
                "check": record["check"],
                "producer": record.get("producer"),
                "consumer": record.get("consumer"),
                "outcome": record["outcome"],
                "count": 0,
                "message": record.get("message") or "",
                "seen": _text(record.get("seen")),
                "expected": _text(record.get("expected")),
                "params": record.get("params"),
                "repros": [],
                "expectation": None
                if entry is None
                else {"reason": entry.reason, "link": entry.link, "label": entry.label},
            }
        href = _repro_href(run, record, out_dir)
        if record.get("shrunk"):
            # the minimal example of a class already counted: its reproducer goes first
            if href and href not in group["repros"]:
                group["repros"].insert(0, href)
                del group["repros"][MAX_REPROS:]
            continue
        group["count"] += 1
        if href and len(group["repros"]) < MAX_REPROS and href not in group["repros"]:
            group["repros"].append(href)
    findings = list(groups.values())
    findings.sort(
        key=lambda f: (
            f["expectation"] is not None,
            SEVERITY.get(f["outcome"], 9),
            f["rule"] or "",
            f["check"],
            f["producer"] or "",
            f["consumer"] or "",
        )
    )
    return findings


def _skips(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    counter: Counter[tuple] = Counter()
    for record in counted(records):
        if record["outcome"] == SKIP:
            key = (
                record["check"],
                record.get("producer"),
                record.get("consumer"),
                record.get("message") or "",
            )
            counter[key] += 1
    return [
        {"check": c, "producer": p, "consumer": q, "reason": reason, "count": n}
        for (c, p, q, reason), n in counter.most_common()
    ]


def _skip_reasons(skips: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The skips grouped by reason, as the run's terminal summary lists them: each reason with
    its results and the cells (check/producer/consumer) it was given for, most results first.
    Every skip is in one group: nothing is cut."""
    results: Counter[str] = Counter()
    cells: dict[str, list[str]] = defaultdict(list)
    for s in skips:
        results[s["reason"]] += s["count"]
        cells[s["reason"]].append(cell_key(s))
    return [
        {"reason": reason, "count": n, "cells": sorted(cells[reason])}
        for reason, n in sorted(results.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def version_of(
    envs: Mapping[str, Mapping[str, Any]],
) -> Callable[[Mapping[str, Any]], Callable[[str], str | None]]:
    """For `apply_expectations` and `judge`: a record's library versions, read from its own
    run's env.json (runs merged from several machines keep their own)."""
    versions = {run_id: env_versions(env) for run_id, env in envs.items()}

    def of(record: Mapping[str, Any]) -> Callable[[str], str | None]:
        table = versions.get(str(record.get("run_id")), {})
        return lambda name: lookup_version(table, name)

    return of


def verdict_json(verdict: Verdict, catalogue: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict as matrix.json carries it: the headline, whether it is ok, the threshold,
    and per catalogue group (same order as `catalogue["groups"]`) its status (new, expected,
    below) and side."""
    index = {id(group): i for i, group in enumerate(catalogue["groups"])}
    statuses: list[str | None] = [None] * len(catalogue["groups"])
    for judged in verdict.judged:
        at = index.get(id(judged.group))
        if at is not None:
            statuses[at] = judged.status
    return {
        "headline": verdict.headline(),
        "ok": verdict.ok,
        "fail_on": [s for s in SEVERITIES if s in verdict.fail_on],
        "failing": len(verdict.failing),
        "expectations_given": verdict.expectations_given,
        "status": statuses,
        "entry_errors": [status.describe() for status in verdict.entry_errors],
        "unmatched": [status.describe() for status in verdict.unmatched],
        # entries whose scope did not run here (a library or check absent): not judged
        "entry_notes": [
            "note: " + status.describe().partition(": ")[2] + " (nothing in its scope ran here)"
            for status in verdict.entry_notes
        ],
    }


def _annotate_standalone(groups: list[dict[str, Any]], run: Run) -> None:
    """Each group's `standalone` verification from its run directory's verify.json (`caiconform
    findings --verify`), so the verdict leads with the groups that reproduce standalone and the
    reports mark the others unconfirmed; a group no verification names keeps none."""
    from caiconform.report.verify import (
        VerifyInputError,
        annotate,
        load_verification,
        standalone_key,
    )

    for directory in run.dirs.values():
        try:
            verification = load_verification(directory)
        except VerifyInputError as exc:
            run.warnings.append(str(exc))
            continue
        if verification:
            named = set((verification.get("groups") or {}).keys())
            annotate([g for g in groups if standalone_key(g) in named], verification, directory)


def _annotate_known(groups: list[dict[str, Any]], run: Run) -> None:
    """Each group's known upstream reports and triage (`report.upstream.annotate_known`), so
    every report shows them; a triage file that cannot be read is a warning of the run."""
    from caiconform.report.triage import TriageError
    from caiconform.report.upstream import annotate_known, known_reports

    try:
        annotate_known(groups, known_reports())
    except (TriageError, ValueError) as exc:
        run.warnings.append(str(exc))


def _annotate_releases(groups: list[dict[str, Any]], run: Run) -> list[dict[str, Any]] | None:
    """Each group's `releases` (since when it is seen, the release that fixed it:
    `report.releases.annotate_since`) from the charts in the run's first directory holding any
    (`releases-LIBRARY.json`, `caiconform releases --annotate`), and those charts; None without
    one. A chart that cannot be read is a warning of the run."""
    from caiconform.report.releases import ReleasesInputError, annotate_since, load_charts

    for run_id, directory in run.dirs.items():
        try:
            charts = load_charts(directory)
        except ReleasesInputError as exc:
            run.warnings.append(str(exc))
            continue
        if charts:
            versions = env_versions(run.envs.get(run_id) or {})
            libraries = {c["library"]: lookup_version(versions, c["library"]) for c in charts}
            annotate_since(groups, charts, libraries)
            return charts
    return None


def build_matrix(
    run: Run,
    out_dir: str | Path,
    application: Application | None = None,
    *,
    fail_on: Iterable[str] = DEFAULT_FAIL_ON,
    expectations: Sequence[Expectation] | None = None,
) -> dict[str, Any]:
    """The JSON-able matrix of `run`; reproducer paths are made relative to `out_dir`, where the
    report files go. With `application` (expectations applied to `run.records`), findings an
    entry covers carry that entry's reason, and the entries' statuses are included. `verdict`
    is `caiconform.results.verdict.judge` of the whole run at `fail_on` with `expectations`."""
    out_dir = Path(out_dir)
    if application is None:
        verdicts = [(record, None) for record in run.records]
    else:
        verdicts = [(v.record, v.entry) for v in application.records]
    cells = _cells(run.records)
    findings = _findings(run, verdicts, out_dir)
    rule_ids = sorted({f["rule"] for f in findings if f["rule"] in RULES})
    totals = Counter(record["outcome"] for record in counted(run.records))
    right = sum(is_correct_rejection(record) for record in counted(run.records))
    runs = Counter(str(record["run_id"]) for record in counted(run.records))
    catalogue = build_catalogue(run.records, run.envs, run.confirmations)
    for group in catalogue["groups"]:
        reproducer = group["reproducer"]
        reproducer["href"] = _repro_href(run, reproducer, out_dir)
    _annotate_standalone(catalogue["groups"], run)
    _annotate_known(catalogue["groups"], run)
    releases = _annotate_releases(catalogue["groups"], run)
    coverage = build_coverage(run.records, planned_from_dirs(run.dirs))
    verdict = judge(
        run.records,
        fail_on=fail_on,
        expectations=expectations,
        version_of=version_of(run.envs),
        catalogue=catalogue,
    )
    skips = _skips(run.records)
    saturated_cells, unrun, saturated_found = saturation_from_dirs(run.dirs)
    matrix: dict[str, Any] = {
        "schema": SCHEMA,
        "summary": {
            "results": sum(totals.values()),
            "outcomes": {o: totals[o] for o in OUTCOMES if totals[o]},
            "correct_rejections": right,
            # a cell that could not run journals one skip record with `"index": null` (older
            # journals have no index at all: their skips are not told apart)
            "cells_skipped": sum(
                r["outcome"] == SKIP and "index" in r and r["index"] is None
                for r in counted(run.records)
            ),
            "pass_fraction": pass_fraction(totals + Counter({CORRECT_REJECTION: right})),
            "finding_groups": len(findings),
            "unexpected_groups": sum(1 for f in findings if f["expectation"] is None),
            # defect groups: those about their input (no one's defect) are counted apart
            "catalogue_groups": catalogue["summary"]["groups"]
            - catalogue["summary"].get("about_input_groups", 0),
            "about_input_groups": catalogue["summary"].get("about_input_groups", 0),
            # one per bug (`results.fold`): what `by_severity` counts
            "defect_findings": sum(
                1 for g in findings_of(catalogue["groups"]) if not g.get("about_input")
            ),
            "by_severity": catalogue["summary"]["by_severity"],
            "failing_groups": len(verdict.failing),
            "ambiguous_groups": catalogue["summary"]["ambiguous_groups"],
            "required_combinations": coverage["summary"]["required"],
            "not_exercised": coverage["summary"]["not_exercised"],
            # cells that met nothing but pass and skip and ended their draws early
            "saturated_cells": saturated_cells,
            "unrun_examples": unrun,
            "saturated_found_cells": saturated_found,
        },
        "runs": {
            run_id: {"results": runs[run_id], "env": run.envs.get(run_id, {})}
            for run_id in dict.fromkeys([*run.envs, *runs])
        },
        "families": _families(cells),
        "cells": cells,
        "scores": _scores(cells),
        "findings": findings,
        "rules": {rule_id: RULES[rule_id].to_dict() for rule_id in rule_ids},
        "skips": skips,
        "skip_reasons": _skip_reasons(skips),
        "expectations": None
        if application is None
        else [status.to_dict() for status in application.entries],
        "warnings": list(run.warnings),
        "catalogue": catalogue,
        # numba-cuda beside numba-cuda-mlir (None unless both ran a pair of twin cells)
        "migration": migration_rows(catalogue, cells),
        "verdict": verdict_json(verdict, catalogue),
        "coverage": coverage,
        # the charts of libraries' releases (releases-LIBRARY.json in the run directory), or None
        "releases": releases,
    }
    return json_safe(matrix)
