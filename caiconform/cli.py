"""The `caiconform` command line: one sub-command per module in `caiconform.commands`.

Only the chosen command's module is imported, so `caiconform check file.json` does not pay for
what `caiconform run` needs. A command module defines `add_arguments(parser)` and
`run(args) -> int`; the first sentence of its docstring is its help line. To add a command, add one entry to
`COMMANDS`. A command signals bad user input by raising `UsageError` (`caiconform.errors`, the one
class the runner raises too, re-exported here): `main` prints one line, `caiconform: error: ...`,
and exits 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from types import ModuleType

from caiconform.errors import UsageError

__all__ = ["COMMANDS", "UsageError", "main", "console", "parse_cai_version", "version"]

#: command name -> module implementing it (imported only when that command runs)
COMMANDS: dict[str, str] = {
    "check": "caiconform.commands.check",
    "rules": "caiconform.commands.rules",
    "report": "caiconform.commands.report",
    "compare": "caiconform.commands.compare",
    "releases": "caiconform.commands.releases",
    "findings": "caiconform.commands.findings",
    "emm-check": "caiconform.commands.emm_check",
    "run": "caiconform.commands.run",
    "baseline": "caiconform.commands.baseline",
}

EXIT_USAGE = 2


def parse_cai_version(raw: str | None) -> int | None:
    """The `--version N` option of `check` and `rules`: a CAI version 0-3, or None when not
    given; UsageError otherwise."""
    if raw is None:
        return None
    if raw not in ("0", "1", "2", "3"):
        raise UsageError(f"--version must be 0, 1, 2 or 3, got {raw!r}")
    return int(raw)


def console():
    """A rich Console for command output; wide when writing to a file or pipe, where rich would
    otherwise assume 80 columns and fold every table cell."""
    from rich.console import Console

    out = Console(highlight=False)
    if not out.is_terminal:
        out.width = max(out.width, 160)
    return out


#: a sentence ends at a full stop followed by white space or the end (not "matrix.json,")
_SENTENCE_END = re.compile(r"(?<=[.!?])(?:\s|$)")


def _summary(module: ModuleType) -> str:
    """The first sentence of a command module's docstring, on one line: its `--help` line."""
    paragraph = (module.__doc__ or "").strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    end = _SENTENCE_END.search(text)
    return text[: end.start()] if end else text


def version() -> str:
    """The installed distribution's version; the package's own when it is not installed (a
    checkout on `PYTHONPATH`)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version("caiconform")
    except PackageNotFoundError:
        from caiconform import __version__

        return __version__


def _build_parser(chosen: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="caiconform",
        description="Conformance checks for the CUDA Array Interface and Numba's EMM interface.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"caiconform {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if chosen is not None and name != chosen:
            sub.add_parser(name)
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if chosen is not None:
                raise UsageError(f"command {name!r} is unavailable: {exc}") from None
            sub.add_parser(name, help=f"(unavailable: {exc})")
            continue
        command = sub.add_parser(
            name,
            help=_summary(module),
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `caiconform` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["--version"], ["-V"]):
        # before building the parser, which imports every command's module
        print(f"caiconform {version()}")
        return 0
    chosen = next((a for a in argv if not a.startswith("-")), None)
    try:
        parser = _build_parser(chosen if chosen in COMMANDS else None)
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        return args.run(args)
    except UsageError as exc:
        print(f"caiconform: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as Python's docs recommend.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("caiconform: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    # `python -m caiconform.cli`: run the imported module, so that commands raising
    # caiconform.cli.UsageError are caught here (this file runs as __main__, a separate copy).
    from caiconform import cli

    sys.exit(cli.main())
