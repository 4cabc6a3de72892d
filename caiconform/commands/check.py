"""Judge one export, or recorded interface dicts, against the CAI rules.

TARGET is one of
  module:attr   an object exposing __cuda_array_interface__, a zero-argument callable (or class)
                returning one, or a dict judged as the interface dict itself; attr may be dotted.
                An object exposing __dlpack__ but no __cuda_array_interface__ is judged by its
                DLPack export instead (caiconform.dlpack.validate.check_dlpack: its
                __dlpack_device__ and the capsule, against the capsule-visible DLPACK rules)
  FILE          a JSON file holding one recorded dict, or JSON Lines (one dict a line)
  -             the same, read from standard input

JSON has no tuples, so a recorded dict's lists stand for tuples (shape, strides, data, descr
fields) and are not reported as lists; a recorded mask is a nested dict. The schema check is
pure Python; live checks (pointer, allocation, stream) need the live object and a GPU.

A module:attr target is imported, called and read in a child process, never in caiconform's
own. The export is read more than once (the attribute, or __dlpack__, READS times in all): one
that changes between reads is a finding naming what changed. What ends a process (an exit,
os._exit, a signal, or an exception that is no Exception: SystemExit, KeyboardInterrupt,
GeneratorExit) is judged by where it happens:
  - in the export (the property, __dlpack__ or __dlpack_device__): a MUST finding of that
    protocol (CAI-ATTR-DICT, DLPACK-CAPSULE-NAME, DLPACK-DEVICE-TUPLE), exit status 1;
  - while the target is imported or called: one line, exit status 3, no verdict.
An import or call raising an Exception is a usage error (exit status 2).

Exit status: 0 no MUST-level violation, 1 at least one, 2 bad usage (an import or call that
raised an Exception) or a target that gave no answer within `--timeout` seconds, 3 the target
ended its process while being imported or called (one line says how), so there is no verdict.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caiconform.cli import UsageError, parse_cai_version
from caiconform.cli import console as cli_console
from caiconform.commands._check_reads import READS, Watched, difference, shown, snapshot
from caiconform.spec.findings import Finding, Report, finding
from caiconform.spec.rules import level_text
from caiconform.spec.validate import ATTR, CURRENT_VERSION, producers_failure, validate

__all__ = [
    "add_arguments",
    "run",
    "live_checks",
    "load_targets",
    "Target",
    "RecordedExport",
    "DEFAULT_TIMEOUT_S",
]

#: Why live checks did not run on a recorded dict.
RECORDED_SKIP = "recorded dict: no live object to inspect (schema only)"
#: Why CAI live checks did not run on an object judged by its DLPack export (the prefix of
#: every such line, so the verdict says which protocol judged it).
DLPACK_SKIP = "DLPack export: its capsule judged without a device, no CAI live checks"
#: seconds a target may take to import, export and be judged before `check` gives up on it
DEFAULT_TIMEOUT_S = 10.0
#: digits int() converts at once (Python limits one conversion to 4,300 by default)
_INT_CHUNK = 4000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET", help="module:attr, a JSON/JSONL file, or -")
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    parser.add_argument(
        "--version",
        metavar="N",
        default=None,
        help="judge as CAI version N (0-3) instead of the dict's own version",
    )
    parser.add_argument(
        "--timeout",
        metavar="S",
        type=_seconds,
        default=DEFAULT_TIMEOUT_S,
        help=f"give up (exit 2) when importing, reading and judging TARGET takes longer than S "
        f"seconds, as a property that hangs would (default {DEFAULT_TIMEOUT_S:g}; 0: no limit)",
    )


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {raw!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {raw!r}")
    return value


@dataclass
class Target:
    """One thing to judge: `label` says where it came from; `live` is False for recorded dicts."""

    label: str
    obj: Any
    live: bool


class RecordedExport:
    """Stands for an object whose export was recorded: a recorded mask is a nested dict, but the
    spec wants an object exposing the interface there."""

    def __init__(self, interface: dict) -> None:
        self.__cuda_array_interface__ = interface


def live_checks(obj: Any) -> tuple[list[Finding], str | None]:
    """Checks that need the live object and a GPU (pointer attributes, allocation extent,
    stream validity): (findings, None) when they ran, ([], reason) when they were skipped.

    Delegates to `caiconform.reference.live.live_check(obj)`, which has the same contract,
    when that module imports; it is imported only here, for live targets. Where a GPU is
    present the checker reads the attribute again, so a property raising SystemExit,
    GeneratorExit or KeyboardInterrupt (no Exception; `validate` already made it a finding)
    skips the live checks here, as it does where there is no GPU, rather than ending `check`.
    """
    try:
        from caiconform.reference.live import live_check
    except ImportError:
        return [], "no live checker installed"
    try:
        findings, skipped = live_check(obj)
    except Exception as exc:  # a broken checker must not turn a verdict into a traceback
        return [], f"live checker failed: {type(exc).__name__}: {exc}"
    except BaseException as exc:  # the target's own: raised while its attribute was read
        if not producers_failure(exc):
            raise
        return [], f"the target raised {type(exc).__name__} while the live checks read it"
    if skipped is not None:
        skipped = skipped.removeprefix("live checks skipped: ")
    return findings, skipped


#: exit status when the target ended its process while imported or called (no verdict)
EXIT_TARGET_ENDED = 3


class TargetEnded(Exception):
    """The target's import or call ended the child process: no verdict (exit 3, one line)."""


class _Ended(Exception):
    """In the child: the target's import or call raised an exception that is no Exception
    (SystemExit, KeyboardInterrupt, GeneratorExit, ...), which ends a process as os._exit
    does; the parent makes it TargetEnded."""


def run(args: argparse.Namespace) -> int:
    version = parse_cai_version(args.version)
    timeout = getattr(args, "timeout", DEFAULT_TIMEOUT_S)
    try:
        if module_target(args.target) is not None:
            results = judge_in_child(args.target, version, timeout)
        else:
            results = _within(timeout, args.target, lambda: _judge(args.target, version))
    except TargetEnded as exc:
        print(f"caiconform: error: {exc}", file=sys.stderr)
        return EXIT_TARGET_ENDED
    if args.json:
        _print_json(results)
    else:
        _print_tables(results)
    return 0 if all(report.ok for _, report, _ in results) else 1


def _judge(
    spec: str, version: int | None, phase: Callable[[str], None] = lambda _: None
) -> list[tuple[Target, Report, str | None]]:
    """Load `spec`'s targets and judge each; `phase(name)` is told before each step that runs
    the target's code ("import", "read", "__dlpack_device__", "__dlpack__", "live")."""
    results = []
    for target in load_targets(spec, phase):
        phase("read")
        if target.live and _dlpack_only(target.obj):
            results.append((target, *_judge_dlpack(target.obj, version, phase)))
            continue
        first = _read(target.obj) if target.live else None
        report = validate(target.obj, version=version)
        if target.live:
            report.findings.extend(_changed_cai(first, target.obj))
            phase("live")
            extra, skipped = live_checks(target.obj)
            report.findings.extend(extra)
        else:
            skipped = RECORDED_SKIP
        results.append((target, report, skipped))
    return results


def _read(obj: Any) -> Any:
    """A snapshot of what reading the attribute gives: the value, or "<raised NAME>"."""
    try:
        value = getattr(obj, ATTR)
    except BaseException as exc:  # the attribute's own failure: `validate` reports it
        if not producers_failure(exc):
            raise
        return f"<raised {type(exc).__name__}>"
    try:
        return snapshot(value)
    except Exception as exc:  # noqa: BLE001 - a value that cannot be read is shown as such
        return f"<unreadable: {type(exc).__name__}>"


def _changed_cai(first: Any, obj: Any) -> list[Finding]:
    """A CAI-ATTR-DICT finding naming the entry that changed when the attribute, read again
    after judging (READS reads in all, `first` before it was judged), gives something else."""
    for _ in range(READS - 2):
        changed = difference(first, _read(obj))
        if changed is not None:
            entry, was, now = changed
            return [
                finding(
                    "CAI-ATTR-DICT",
                    f"{ATTR}{entry}",
                    f"{shown(now)} on a later read (the export changed between reads)",
                    f"{shown(was)}, as the first read gave (the same dict on every read)",
                )
            ]
    return []


def _judge_dlpack(
    obj: Any, version: int | None, phase: Callable[[str], None]
) -> tuple[Report, str]:
    """The verdict on an object judged by its DLPack export: `check_dlpack`'s, with
    `__dlpack__` called again (READS calls in all) to see that its capsule does not change.
    An exception that is no Exception (SystemExit, KeyboardInterrupt, ...) from
    `__dlpack_device__` or `__dlpack__` is that method's MUST finding, as a property raising it
    is CAI-ATTR-DICT's."""
    from caiconform.dlpack.validate import check_dlpack

    watched = Watched(obj, phase)
    judged = CURRENT_VERSION if version is None else version
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    try:
        findings, refused = check_dlpack(watched)
    except BaseException as exc:  # only what check_dlpack lets through: no Exception
        if not producers_failure(exc):
            raise
        method = watched.calling or "__dlpack__"
        seen = f"{type(exc).__name__} raised"
        return Report(kind, judged, [_dlpack_death(method, seen)]), f"{DLPACK_SKIP} ({seen})"
    if refused is None and watched.asked is not None:
        findings.extend(_changed_capsule(watched))
    skipped = DLPACK_SKIP if refused is None else f"{DLPACK_SKIP} ({refused})"
    return Report(kind, judged, findings), skipped


def _dlpack_death(method: str, seen: str) -> Finding:
    """The MUST finding for `method` (`__dlpack__` or `__dlpack_device__`) having raised an
    exception that ends a process, or having ended it: `seen` says which."""
    if method == "__dlpack_device__":
        return finding(
            "DLPACK-DEVICE-TUPLE", "__dlpack_device__()", seen, "(device_type, device_id)"
        )
    return finding(
        "DLPACK-CAPSULE-NAME",
        "__dlpack__()",
        seen,
        "a PyCapsule named 'dltensor_versioned' or 'dltensor'",
    )


def _changed_capsule(watched: Watched) -> list[Finding]:
    """A finding naming what changed when `__dlpack__`, called again with the keywords that
    gave the judged capsule, gives another: DLPACK-CAPSULE-NAME for the capsule itself (its
    name, or no capsule), DLPACK-PRODUCER-DESCRIBES-DATA for its tensor's fields."""
    first = watched.capsules[-1]
    for _ in range(READS - 1):
        try:
            watched.__dlpack__(**(watched.asked or {}))
            later = watched.capsules[-1]
        except BaseException as exc:
            if not producers_failure(exc):
                raise
            later = {"capsule": f"<raised {type(exc).__name__}>"}
        changed = difference(first, later)
        if changed is None:
            continue
        entry, was, now = changed
        rule = "DLPACK-CAPSULE-NAME" if entry == "['capsule']" else "DLPACK-PRODUCER-DESCRIBES-DATA"
        return [
            finding(
                rule,
                f"__dlpack__(){entry}",
                f"{shown(now)} on a later call (the capsule changed between calls)",
                f"{shown(was)}, as the judged capsule gave (the same tensor on every call)",
            )
        ]
    return []


# --- a module:attr target, in a child process ------------------------------------------------

#: what the child was doing when it ended, as the line or finding says it
_DOING = {
    "import": "importing or calling it",
    "read": f"reading its {ATTR}",
    "__dlpack_device__": "calling its __dlpack_device__()",
    "__dlpack__": "calling its __dlpack__()",
    "live": "running the live checks on it",
}


def judge_in_child(
    spec: str, version: int | None, seconds: float
) -> list[tuple[Target, Report, str | None]]:
    """`_judge(spec, version)` run in a forked child, so nothing the target does (exit,
    os._exit, a signal, any exception) ends or hangs this process. The child reports each phase
    as it begins, then its results (or a usage error) through a pipe. A child that ends while
    reading the attribute gives a CAI-ATTR-DICT finding; one that ends while importing or
    calling is TargetEnded; no answer after `seconds` (0: no limit) is a UsageError."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(spec, version, send), daemon=True)
    child.start()
    send.close()
    deadline = None if not seconds else time.monotonic() + seconds
    phase = "import"
    try:
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not receive.poll(left):
                raise UsageError(
                    f"{spec}: no answer after {seconds:g} s (an import, call or property that "
                    "hangs?); --timeout S waits longer"
                )
            try:
                kind, value = receive.recv()
            except (EOFError, OSError):
                break
            if kind == "phase":
                phase = value
            elif kind == "usage":
                raise UsageError(value)
            elif kind == "ended":
                raise TargetEnded(value)
            else:
                return [
                    (Target(label, None, live), report, skipped)
                    for label, live, report, skipped in value
                ]
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    how = _how_it_ended(child.exitcode)
    judged = CURRENT_VERSION if version is None else version
    if phase in ("__dlpack_device__", "__dlpack__"):
        seen = f"the process ended ({how}) while calling it"
        report = Report(spec, judged, [_dlpack_death(phase, seen)])
        skipped = f"{DLPACK_SKIP} (the process ended ({how}) while {_DOING[phase]})"
        return [(Target(spec, None, True), report, skipped)]
    if phase == "read":
        seen = f"the process ended ({how}) while reading it"
        report = Report(spec, judged, [finding("CAI-ATTR-DICT", "", seen, "a dict")])
        return [(Target(spec, None, True), report, f"the process ended ({how})")]
    raise TargetEnded(f"{spec}: the process ended ({how}) while {_DOING[phase]}: no verdict")


def _how_it_ended(exitcode: int | None) -> str:
    """A child's end in words: "exit status N" or "signal SIGSEGV"."""
    if exitcode is None or exitcode >= 0:
        return f"exit status {exitcode}"
    import signal

    try:
        return f"signal {signal.Signals(-exitcode).name}"
    except ValueError:
        return f"signal {-exitcode}"


def _child(spec: str, version: int | None, send: Any) -> None:
    """The child's work: judge `spec` and send the results, or the usage error. What the
    target prints goes to standard error, so `--json` output stays JSON."""
    import faulthandler
    import os

    os.dup2(2, 1)
    faulthandler.disable()  # a crash is the parent's line to write, not a traceback
    try:
        results = _judge(spec, version, lambda name: send.send(("phase", name)))
        payload = [(t.label, t.live, report, skipped) for t, report, skipped in results]
        message: tuple[str, Any] = ("results", payload)
    except UsageError as exc:
        message = ("usage", str(exc))
    except _Ended as exc:
        message = ("ended", str(exc))
    except BaseException as exc:  # the target's own exception past every guard
        message = ("usage", f"{spec}: raised {_raised(exc)}")
    try:
        send.send(message)
    except BaseException as exc:  # a report that does not pickle: say so rather than end
        send.send(("usage", f"{spec}: its report could not be sent: {type(exc).__name__}"))
    send.close()


def _within(seconds: float, spec: str, work: Callable[[], Any]) -> Any:
    """`work()`'s value, or UsageError when it has not returned after `seconds` (0: wait as
    long as it takes). It runs in a daemon thread, so a target that hangs (a property that
    never returns) is left behind and the process still exits."""
    if not seconds:
        return work()
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="caiconform-check", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise UsageError(
            f"{spec}: no answer after {seconds:g} s (an import, call or property that hangs?); "
            "--timeout S waits longer"
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# --- targets -------------------------------------------------------------------------------


def module_target(spec: str) -> tuple[str, str] | None:
    """(module, attr) when TARGET names a module's object rather than JSON (a file, `-`)."""
    if spec == "-":
        return None
    path = Path(spec)
    if path.exists() or path.suffix.lower() in (".json", ".jsonl"):
        return None
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        return None
    return module_name, attr


def load_targets(spec: str, phase: Callable[[str], None] = lambda _: None) -> list[Target]:
    """What TARGET names, as a list (a JSON Lines file gives several); UsageError otherwise.
    `phase("import")` is told before a module:attr target's code runs."""
    named = module_target(spec)
    if named is not None:
        phase("import")
        return [_resolve(*named, spec, phase)]
    if spec == "-":
        return _parse_json_text(sys.stdin.read(), "<stdin>")
    path = Path(spec)
    if path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {spec}: {exc}") from None
        return _parse_json_text(text, spec)
    if path.exists():
        raise UsageError(f"{spec} is not a file")
    if path.suffix.lower() in (".json", ".jsonl"):
        raise UsageError(f"no such file: {spec}")
    raise UsageError(f"TARGET {spec!r} is neither module:attr, an existing JSON file, nor -")


def _resolve(
    module_name: str, attr: str, spec: str, phase: Callable[[str], None] = lambda _: None
) -> Target:
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import module {module_name!r}: {exc}") from None
    except Exception as exc:  # a module that cannot be imported
        raise UsageError(f"importing {module_name!r} raised {_raised(exc)}") from None
    except BaseException as exc:  # a script exiting at import: it ended its process
        raise _Ended(
            f"{spec}: importing {module_name!r} raised {_raised(exc)}: no verdict"
        ) from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"{spec}: no attribute {part!r}") from None
        except BaseException as exc:
            raise UsageError(f"{spec}: reading {part!r} raised {_raised(exc)}") from None
    # type()-based tests: an object's own __class__ may lie or raise
    if issubclass(type(obj), dict):
        return Target(spec, obj, live=False)
    if issubclass(type(obj), type) or (callable(obj) and not _exposes(obj, phase)):
        phase("import")
        try:
            obj = obj()
        except Exception as exc:
            raise UsageError(f"calling {spec}() raised {_raised(exc)}") from None
        except BaseException as exc:  # SystemExit and the like: it ended its process
            raise _Ended(f"{spec}: calling it raised {_raised(exc)}: no verdict") from None
        spec = f"{spec}()"
    return Target(spec, obj, live=not issubclass(type(obj), dict))


def _dlpack_only(obj: Any) -> bool:
    """Whether `obj` exposes `__dlpack__` (on its type, as a consumer looks it up) and no
    `__cuda_array_interface__`: the objects judged by their DLPack export."""
    return hasattr(type(obj), "__dlpack__") and not hasattr(type(obj), ATTR) and not _has(obj)


def _has(obj: Any) -> bool:
    """Whether reading the attribute on the object itself gives anything but AttributeError."""
    try:
        getattr(obj, ATTR)
    except AttributeError:
        return False
    except BaseException:  # the attribute's own failure: `validate` reports it
        return True
    return True


def _exposes(obj: Any, phase: Callable[[str], None]) -> bool:
    """Whether `obj` claims the attribute: reading it gives a value or raises something other
    than AttributeError (which `validate` then reports)."""
    phase("read")
    try:
        getattr(obj, ATTR)
    except AttributeError:
        return False
    except BaseException:  # sys.exit(), os._exit() or worse: `validate` reports it
        return True
    return True


#: characters of an exception's text a line quotes
_QUOTED = 200


def _raised(exc: BaseException) -> str:
    """An exception as a line quotes it: its type and its text on one line, cut to `_QUOTED`
    characters; never raises."""
    name = type(exc).__name__
    try:
        text = " ".join(str(exc).split())
    except BaseException:
        return f"{name} (its text could not be read)"
    if len(text) > _QUOTED:
        text = text[: _QUOTED - 3] + "..."
    return f"{name}: {text}" if text else name


def _parse_json_text(text: str, source: str) -> list[Target]:
    try:
        values = [(source, _loads(text, source))]
    except json.JSONDecodeError as whole_error:
        values = []
        lines = text.splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                values.append((f"{source}:{number}", _loads(line, f"{source}:{number}")))
            except json.JSONDecodeError as line_error:
                # before any good line: JSON Lines when a later line is an object of its own,
                # else one JSON text, whose own error says where
                if values or _holds_a_json_line(lines[number:]):
                    where, error = number, line_error
                else:
                    where, error = whole_error.lineno, whole_error
                raise UsageError(f"{source}: line {where}: invalid JSON: {error.msg}") from None
    if not values:
        raise UsageError(f"{source}: no JSON object in it")
    targets = []
    for label, value in values:
        if not isinstance(value, dict):
            raise UsageError(
                f"{label}: holds {_JSON_TYPES.get(type(value), 'a JSON value')}, expected an "
                "object (a recorded interface dict)"
            )
        targets.append(Target(label, from_json(value), live=False))
    return targets


#: what a JSON value that is not an object is, in JSON's words
_JSON_TYPES = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def _holds_a_json_line(lines: list[str]) -> bool:
    """Whether one of `lines` is a JSON object on its own (the text is JSON Lines)."""
    for line in lines:
        if line.lstrip().startswith("{"):
            try:
                if isinstance(_loads(line, ""), dict):
                    return True
            except (json.JSONDecodeError, UsageError):
                continue
    return False


def _loads(text: str, where: str) -> Any:
    """json.loads, with a RecursionError (the decoder's answer to very deep nesting) turned
    into a usage error: no recorded interface dict nests that deep. Integers of any length are
    read as they are written (Python's own limit on converting digits would stop them), so
    the validator judges their value."""
    try:
        return json.loads(text, parse_int=_parse_int)
    except RecursionError:
        raise UsageError(f"{where}: JSON nested too deeply to be an interface dict") from None


def _parse_int(digits: str) -> int:
    """A JSON integer's value, however many digits it has (converted in chunks, each under
    Python's limit on one str-to-int conversion)."""
    if len(digits) <= _INT_CHUNK:
        return int(digits)
    sign, digits = (-1, digits[1:]) if digits.startswith("-") else (1, digits)
    value = 0
    for start in range(0, len(digits), _INT_CHUNK):
        chunk = digits[start : start + _INT_CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return sign * value


def from_json(d: dict) -> dict:
    """A recorded dict with JSON's lists turned back into the tuples the spec asks for."""
    out = dict(d)
    for key in ("shape", "strides", "data"):
        if type(out.get(key)) is list:
            out[key] = tuple(out[key])
    if type(out.get("descr")) is list:
        out["descr"] = _descr_from_json(out["descr"])
    if type(out.get("mask")) is dict:
        out["mask"] = RecordedExport(from_json(out["mask"]))
    return out


def _descr_from_json(descr: list) -> list:
    fields: list[Any] = []
    for field in descr:
        if type(field) is not list:
            fields.append(field)
            continue
        items = list(field)
        if items and type(items[0]) is list:
            items[0] = tuple(items[0])
        if len(items) > 1 and type(items[1]) is list:
            items[1] = _descr_from_json(items[1])
        if len(items) > 2 and type(items[2]) is list:
            items[2] = tuple(items[2])
        fields.append(tuple(items))
    return fields


# --- output --------------------------------------------------------------------------------


def _print_json(results: list[tuple[Target, Report, str | None]]) -> None:
    payload = {
        "ok": all(report.ok for _, report, _ in results),
        "results": [
            {
                "label": target.label,
                **report.to_dict(),
                "live_checks": {"ran": skipped is None, "skipped": skipped},
            }
            for target, report, skipped in results
        ],
    }
    json.dump(payload, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _print_tables(results: list[tuple[Target, Report, str | None]]) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    console = cli_console()
    for target, report, skipped in results:
        verdict = "[green]OK[/]" if report.ok else "[red]FAIL[/]"
        dlpack = skipped is not None and skipped.startswith(DLPACK_SKIP)
        protocol = "DLPack" if dlpack else f"CAI v{report.version}"
        console.print(
            f"[bold]{escape(target.label)}[/] ({escape(report.target)}), judged as "
            f"{protocol}: {verdict} - {len(report.errors)} error(s), "
            f"{len(report.warnings)} warning(s)"
        )
        if report.findings:
            table = Table(show_lines=False)
            table.add_column("Level", no_wrap=True)
            table.add_column("Rule", no_wrap=True)
            table.add_column("Finding", overflow="fold")
            table.add_column("Spec section", overflow="fold")
            for f in report.findings:
                table.add_row(
                    Text(level_text(f.rule, quote=False)),
                    Text(f.rule),
                    Text(f.message),
                    Text(f.section),
                    style=_STYLE[f.level.value],
                )
            console.print(table)
        if skipped is None:
            console.print("live checks: ran")
        else:
            console.print(f"live checks: skipped - {skipped}", markup=False)


_STYLE = {"MUST": "red", "SHOULD": "yellow", "PORTABILITY": "cyan", "MAY": "dim"}
