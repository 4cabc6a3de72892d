"""Check Numba EMM plugin classes (module:Class) against the External Memory Management contract.

Each plugin runs in a spawned process of its own with the plugin installed as Numba's memory
manager: static checks (base class, abstract methods, construction without CUDA, interface
version, set_memory_manager), then on a GPU: one instance per context, memalloc (sizes 1, 7,
4096, 2^20+3 and an impossible one), finalizers, host memory, memory info, IPC handles opened in
a further spawned process, defer_cleanup, initialize and reset. Without Numba or a GPU the
checks that cannot run are listed as skipped, with the reason.

Numba's side is checked too: with the plugin set through set_memory_manager, and again in a fresh
process through NUMBA_CUDA_MEMORY_MANAGER=<module> when the module names the class, every Numba
allocation path (device_array, device_array_like, to_device, managed_array, mapped_array,
pinned_array, cuda.pinned, cuda.mapped, deallocation under defer_cleanup, IPC open) must hand
out memory the plugin allocated [EMM-NUMBA-NO-DIRECT-ALLOC].

`--numba numba-cuda|numba-cuda-mlir` picks the Numba implementation the plugin is checked under
(default: numba-cuda when installed, else numba-cuda-mlir); naming one that is not installed
is a usage error (exit 2, one line).

Each failure is the plugin's or Numba's, by the side its rule binds: a plugin is not failed for
Numba's own defects (listed on its summary line as Numba's), unless the target is Numba's own
manager. Exit status: 0 when the targets failed no MUST rule of theirs, 1 when one did, 2 when
a target is not an importable class, 3 when a plugin could not be checked at all (every check
skipped: numba-cuda not installed, say), with one line on stderr saying why.
"""

from __future__ import annotations

import argparse
import json
import sys

from caiconform.cli import UsageError
from caiconform.cli import console as cli_console
from caiconform.spec.rules import level_text

__all__ = ["add_arguments", "run", "render"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("targets", nargs="+", metavar="module:Class", help="plugin classes")
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    parser.add_argument(
        "--setup",
        metavar="module:function",
        help="call this in each plugin's process first (e.g. to give RMM a pool)",
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, metavar="S", help="seconds per plugin (600)"
    )
    parser.add_argument(
        "--numba",
        choices=("numba-cuda", "numba-cuda-mlir"),
        help="the Numba implementation to check under (default: numba-cuda when installed, "
        "else numba-cuda-mlir)",
    )


def render(reports, out) -> None:
    """A table per plugin, then one summary line each."""
    from rich.table import Table
    from rich.text import Text

    for report in reports:
        if report.status == "usage":
            continue
        table = Table(title=report.target, title_justify="left")
        for column in ("check", "rule", "level", "outcome", "detail"):
            table.add_column(column, overflow="fold")
        for r in report.results:
            detail = r.message if r.outcome != "pass" else str(r.seen if r.seen is not None else "")
            level = level_text(r.rule, r.level, quote=False)
            table.add_row(*(Text(x) for x in (r.check, r.rule, level, r.outcome, detail)))
        out.print(table)
    for report in reports:
        if report.status == "usage":
            continue
        counts = ", ".join(f"{n} {k}" for k, n in sorted(report.counts().items()))
        if all(r.outcome == "skip" for r in report.results):
            verdict = "NOT CHECKED"
        else:
            own = [r for r in report.results if report.counts_against(r)]
            verdict = f"{len(own)} MUST failure(s) ({_rules(own)})" if own else "no MUST failure"
        line = f"{report.target}: {verdict} ({counts})"
        if report.numba_failures:
            line += (
                f"; Numba's own, not the plugin's: {len(report.numba_failures)} MUST failure(s)"
                f" ({_rules(report.numba_failures)})"
            )
        if report.status == "unavailable":
            line += f"; {report.reason}"
        out.print(line, markup=False, emoji=False)


def _rules(results) -> str:
    """The failed checks by rule: "EMM-X: check-a, check-b; EMM-Y: check-c"."""
    by_rule: dict[str, list[str]] = {}
    for r in results:
        by_rule.setdefault(r.rule, []).append(r.check)
    return "; ".join(f"{rule}: {', '.join(checks)}" for rule, checks in by_rule.items())


def _chosen_numba(named: str | None) -> str:
    """The implementation to check under: the one named (a UsageError when it is not
    installed), else `checker.default_numba()`."""
    from caiconform.adapters.numba_impls import installed
    from caiconform.emm.checker import default_numba

    if named is None:
        return default_numba()
    if not installed(named):
        raise UsageError(f"--numba {named}: the {named} distribution is not installed")
    return named


def run(args: argparse.Namespace) -> int:
    from caiconform.emm.checker import (
        NOT_CHECKED,
        check_plugin,
        exit_code,
        nothing_checked,
        parse_target,
    )

    if args.timeout <= 0:
        raise UsageError(f"--timeout must be > 0, got {args.timeout}")
    for target in args.targets:
        try:
            parse_target(target)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.setup and ":" not in args.setup:
        raise UsageError(f"--setup must be 'module:function', got {args.setup!r}")
    numba = _chosen_numba(args.numba)
    reports = [
        check_plugin(t, timeout=args.timeout, setup=args.setup, numba=numba) for t in args.targets
    ]
    code = exit_code(reports)
    if args.json:
        json.dump(
            {"exit_code": code, "plugins": [r.to_dict() for r in reports]},
            sys.stdout,
            indent=2,
            default=str,
        )
        sys.stdout.write("\n")
    else:
        render(reports, cli_console())
    usage = [r for r in reports if r.status == "usage"]
    if usage and not args.json:
        raise UsageError("; ".join(f"{r.target}: {r.reason}" for r in usage))
    if code == NOT_CHECKED:
        why = "; ".join(
            f"{r.target}: {r.reason or 'every check skipped'}"
            for r in reports
            if nothing_checked(r)
        )
        print(f"caiconform emm-check: nothing checked (exit {NOT_CHECKED}): {why}", file=sys.stderr)
    return code
