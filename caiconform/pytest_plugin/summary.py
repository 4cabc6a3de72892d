"""The plugin's terminal summary: what ran, what was skipped and why, what the expectations
made of the results, where the report is. Without a GPU this is where a maintainer reads that
the exchanges did not run, and why."""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["summary_lines"]

#: at most this many skip reasons and warnings are listed
_LIMIT = 12


def _limited(lines: list[str]) -> list[str]:
    if len(lines) <= _LIMIT:
        return lines
    return [*lines[:_LIMIT], f"  ... and {len(lines) - _LIMIT} more"]


def _verdict_lines(campaign: Any) -> list[str]:
    """The verdict first: what to do, the library's own defects by severity, then what was
    seen in other libraries (listed, not failing) and the test setup's own defects."""
    from caiconform.pytest_plugin.verdicts import SETUP_HINT, setup_errors
    from caiconform.results.verdict import group_line

    verdict = campaign.verdict()
    name = campaign.options.target.name
    lines = [verdict.headline()]
    sections = (
        ("own", ("new",), f"defects of {name}, failing:"),
        ("ambiguous", ("new",), f"defects with no single culprit on {name}'s pairs, failing:"),
        ("own", ("expected",), f"defects of {name} covered by the expectations (baseline):"),
        ("own", ("below",), f"defects of {name} below --cai-fail-on, reported, not failing:"),
        (
            "own",
            ("input",),
            f"about the inputs (a dict breaking a rule it cannot show), no defect of {name}:",
        ),
    )
    for side, statuses, title in sections:
        judged = verdict.of(side, *statuses)
        if judged:
            lines.append(f"{title} {len(judged)}")
            lines += _limited([f"  {group_line(j.group)}" for j in judged])
    peers = verdict.of("peer") + verdict.of("ambiguous", "below", "expected")
    if peers:
        lines.append(f"seen in other libraries, not failing this run: {len(peers)}")
        lines += _limited([f"  {group_line(j.group)} — {j.group.get('why')}" for j in peers])
    setup = setup_errors(campaign.records)
    if setup:
        lines.append(
            f"test setup: the factory raised instead of building an example ({SETUP_HINT}):"
        )
        lines += _limited([f"  {line}" for line in setup])
    return lines


def summary_lines(campaign: Any) -> list[str]:
    from caiconform.pytest_plugin.schema import FAMILY
    from caiconform.spec.protocols import CAI, parse

    target = campaign.options.target
    lines = [campaign.incomplete] if campaign.incomplete else []
    lines += _verdict_lines(campaign) if campaign.records else []
    lines.append(
        f"library under test: {target.name} (producer {target.producer or '-'}, "
        f"consumer {target.consumer or '-'}); failing on: "
        f"{', '.join(sorted(campaign.options.fail_on)) or 'nothing'}"
    )
    if campaign.gpu[0]:
        lines.append("GPU: present; exchanges with other libraries ran through isolated workers")
    else:
        lines.append(f"GPU: none ({campaign.gpu[1]})")
    by_reason: dict[str, list[str]] = {}
    for name, reason in campaign.skipped_items:
        by_reason.setdefault(reason, []).append(name)
    if by_reason:
        lines.append(f"skipped items ({len(campaign.skipped_items)}), by reason:")
        for reason, names in by_reason.items():
            lines.append(f"  {reason}")
            lines.append(f"    {', '.join(names)}")
    for protocol in parse(campaign.options.protocol) if target.consumer else ():
        option = protocol.plugin_consumer
        if option != CAI.plugin_consumer and not getattr(target, option):
            lines.append(
                f"{protocol.title} families: {target.name}'s consumer is not judged over "
                f"{protocol.title} (no --cai-{option.replace('_', '-')}; {target.consumer} "
                f"imports over {CAI.title})"
            )
    schema = Counter(r["outcome"] for r in campaign.records if r["check"] == FAMILY)
    if schema:
        counts = ", ".join(f"{outcome} {n}" for outcome, n in schema.most_common())
        lines.append(f"{FAMILY}: {sum(schema.values())} example(s): {counts}")
    exchanged = Counter(
        r["outcome"] for r in campaign.records if r["check"] != FAMILY and not r.get("shrunk")
    )
    if exchanged:
        counts = ", ".join(f"{outcome} {n}" for outcome, n in exchanged.most_common())
        lines.append(f"exchanges: {sum(exchanged.values())} result(s): {counts}")
    if campaign.skipped_cells:
        lines.append(f"skipped cells ({len(campaign.skipped_cells)}):")
        lines += _limited([f"  {key}: {why}" for key, why in campaign.skipped_cells])
    by_rule: dict[str, list[str]] = {}
    for found in campaign.warnings.values():
        for message in sorted(found):
            rule = message.rsplit("[", 1)[-1].rstrip("]") if message.endswith("]") else "?"
            by_rule.setdefault(rule, []).append(message)
    if by_rule:
        lines.append("warnings (SHOULD/PORTABILITY findings, not failures):")
        lines += _limited(
            [
                f"  {rule}: {len(msgs)} distinct, e.g. {msgs[0]}"
                for rule, msgs in sorted(by_rule.items())
            ]
        )
    for status in campaign.entry_errors:
        lines.append(status.describe())
    lines += campaign.entry_notes
    if campaign.baseline_written is not None:
        path, count = campaign.baseline_written
        lines.append(
            f"baseline: wrote {count} expectation(s) to {path}; fill in the reasons, commit it, "
            f"and run with --cai-expectations {path}"
        )
    if campaign.report_path is not None:
        lines.append(f"report: {campaign.report_path}")
    elif campaign.keep:
        lines.append(f"runs and reproducers kept in {campaign.workdir} (--cai-report for a report)")
    return lines
