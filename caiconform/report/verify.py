"""Running each defect's standalone reproducer in a fresh process where caiconform cannot be
imported, and recording whether it reproduces.

A finding a maintainer accepts carries a script that imports only numpy and the libraries of the
exchange, prints one `BUG: ...` or `OK: ...` line and exits 1 or 0 (docs/reports.md, "Standalone
reproducers"). `verify_groups` writes each group's script (from `caiconform.report.standalone.
script_for_group`), refuses any that imports caiconform (read with `ast`), and runs the others,
several at a time, each as `python -I -u` in an empty temporary directory behind a bootstrap
that makes `import caiconform` fail (the caller's PYTHONPATH, which `-I` ignores, is put back on
`sys.path`: libraries installed with `pip --target` stay importable), with a timeout. The last
`BUG:`/`OK:` line a script prints is its verdict, and only with the exit status it promises (1,
0). Each group gets `standalone`:

- `reproduces`: exit 1 and a last `BUG:` line;
- `does not`: exit 0 and a last `OK:` line (`result: ok`);
- `no verdict`: the script ran here and broke its contract: no `BUG:`/`OK:` line, or one its
  exit status contradicts: it timed out (`timeout`), died by a signal (`signal`, named) or
  exited otherwise (`error`, with its exit status and the last lines of its standard error);
- `not run here`: the script could not run on this machine: a library it imports (itself or in
  the program it runs as a child) is not installed (`library missing`: found before it runs,
  or its ModuleNotFoundError/ImportError), or the CUDA driver here sees no device (`no GPU`:
  the script's verdict or error says so, or it gave no verdict on such a machine). Neither
  reproduced nor not: it never replaces an earlier verification of the group;
- `none`: no script (the generator wrote none, or failed or wrote one that does not parse: `no
  script`, `generator error`), or one that needs caiconform (`imports caiconform`, seen in the
  source or when the bootstrap blocked it).

The results go to `RUN_DIR/verify.json` (schema `caiconform-verify/1`), keyed by the group's
stable name (`standalone_key`), each dated (`at`, UTC) with the Python that ran it; its script
is `RUN_DIR/standalone/<name>.py`, the one that gave the entry kept. A verification of some
groups (one library) updates their entries and keeps the others'; of two entries of one group
the newer wins (`newer_entry`), except that `not run here` never replaces another.
`caiconform findings` reads it back with `load_verification` and `annotate`, so re-cataloguing
the run keeps them; `annotate` shows a group not run here as not verified. The statuses and the
order findings and the verdict lead with (`lead_order`) are `caiconform.results.verification`,
below the verdict that reads them.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from caiconform.cuda.device import NO_DRIVER_WORDS
from caiconform.results.verification import (
    DOES_NOT,
    NO_VERDICT,
    NONE,
    NOT_RUN,
    REPRODUCES,
    STATUSES,
)
from caiconform.results.wording import issue_filename
from caiconform.rundir import STANDALONE_DIR, RunDir

__all__ = [
    "SCHEMA",
    "DEFAULT_JOBS",
    "DEFAULT_TIMEOUT_S",
    "VerifyInputError",
    "standalone_key",
    "caiconform_imports",
    "imported_modules",
    "missing_modules",
    "no_gpu",
    "classify",
    "run_script",
    "verify_groups",
    "newer_entry",
    "load_verification",
    "annotate",
    "status_line",
    "generator",
    "standalone_script",
]

SCHEMA = "caiconform-verify/1"
#: scripts run at once: each may hold a CUDA context on the one GPU, so a few, not one a core
DEFAULT_JOBS = 4
#: seconds one script may run: importing JAX or PyTorch and building a kernel takes seconds
DEFAULT_TIMEOUT_S = 60.0
#: what the bootstrap's import blocker says; its presence on stderr means the script needed it
BLOCKED = "caiconform is not importable while a standalone reproducer is verified: "
#: lines of a failing script's standard error kept in the record
_STDERR_LINES = 8
#: seconds to collect a killed script's output before giving up on its pipes
_DRAIN_S = 5.0

#: run as `python -I -u -c _BOOTSTRAP PATHS SCRIPT`: the script runs as __main__ with caiconform
#: blocked ahead of every other finder (an editable install's included) and PATHS (a JSON list:
#: the caller's PYTHONPATH, which -I ignores) ahead of site-packages
_BOOTSTRAP = f"""
import json, runpy, sys

class _NoCaiconform:
    def find_spec(self, name, path=None, target=None):
        if name == "caiconform" or name.startswith("caiconform."):
            raise ModuleNotFoundError({BLOCKED!r} + repr(name), name=name)
        return None

for _name in [n for n in sys.modules if n == "caiconform" or n.startswith("caiconform.")]:
    del sys.modules[_name]
sys.meta_path.insert(0, _NoCaiconform())
sys.path[0:0] = json.loads(sys.argv[1])
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


class VerifyInputError(ValueError):
    """A verification that cannot start (a group without examples, an unwritable run
    directory, a broken verify.json); the message is one line for the user."""


Generator = Callable[[dict[str, Any]], "str | None"]


def standalone_key(group: Mapping[str, Any]) -> str:
    """The group's stable name (library-role-rule-outcome, as its issue file is named), which
    names its script `standalone/<key>.py` and its entry in verify.json."""
    return issue_filename(dict(group)).removesuffix(".md")


def _is_caiconform(name: str) -> bool:
    return name == "caiconform" or name.startswith("caiconform.")


def imported_modules(source: str) -> list[str]:
    """The modules `source` imports by absolute name, in order: `import`/`from` statements,
    `__import__` and `importlib.import_module` with a literal name, also inside code it holds
    as a string literal (a child process's program). SyntaxError when `source` does not
    parse."""
    return _imports(ast.parse(source), depth=2)


def _imports(tree: ast.AST, depth: int) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                found.append(node.module)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = node.args[0]
            if (
                name in ("__import__", "import_module")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                found.append(first.value)
        elif (
            depth > 0
            and isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "import" in node.value
            and "\n" in node.value
        ):
            try:
                embedded = ast.parse(node.value)
            except SyntaxError:
                continue
            found += _imports(embedded, depth - 1)
    return found


def caiconform_imports(source: str) -> list[str]:
    """The caiconform modules `source` imports (`imported_modules`). SyntaxError when it does
    not parse."""
    return [name for name in imported_modules(source) if _is_caiconform(name)]


#: run as `python -I -c _PROBE PATHS NAME...`: prints the JSON list of the names no finder knows
#: with PATHS (as for _BOOTSTRAP) on sys.path (a dotted name under a namespace package such as
#: `cuda` is looked up one level down)
_PROBE = """
import importlib.util, json, sys
sys.path[0:0] = json.loads(sys.argv[1])
missing = []
for name in sys.argv[2:]:
    parts = name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
        if spec is not None and spec.origin in (None, "namespace") and len(parts) > 1:
            spec = importlib.util.find_spec(".".join(parts[:2]))
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        missing.append(name)
print(json.dumps(missing))
"""


def _user_paths() -> str:
    """The directories of this process's PYTHONPATH (libraries installed with `pip --target`
    live there), absolute, as a JSON list: a script sees the libraries its user installed,
    although `python -I` ignores the variable."""
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return json.dumps([str(Path(e).resolve()) for e in entries if e and Path(e).is_dir()])


def missing_modules(names: Iterable[str]) -> set[str]:
    """Those of `names` that a fresh `python -I` cannot find (the libraries a script needs
    that are not installed where it would run). Empty when the probe itself fails."""
    wanted = sorted({n for n in names if n and not _is_caiconform(n)})
    if not wanted:
        return set()
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", _PROBE, _user_paths(), *wanted],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return set(json.loads(done.stdout))
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return set()


def _verdict_line(stdout: str) -> str | None:
    lines = [line.strip() for line in stdout.splitlines()]
    said = [line for line in lines if line.startswith(("BUG:", "OK:"))]
    return said[-1] if said else None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: words (lower case) in a script's verdict or error that say the CUDA driver or a device is
#: missing; they count only where this machine's driver sees no device (`no_gpu`)
_NO_GPU_WORDS = (
    *NO_DRIVER_WORDS,
    "cuda_error_insufficient_driver",
    "no cuda gpus are available",
    "not compiled with cuda",
    "cudasupporterror",
    "no platforms that are instances of gpu",
)
#: the last line of a traceback: the exception's (qualified) class name and its message
_EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception)): ?(.*)$")
_NO_MODULE = re.compile(r"No module named '([^']+)'")
#: characters of a line quoted as the evidence of a script that could not run here
_EVIDENCE_CHARS = 200


def no_gpu() -> str | None:
    """Why this machine's CUDA driver sees no device (`caiconform.cuda.gpu_available`), or None
    when it sees one. Asked only when a script's output suggests it (the answer is cached)."""
    from caiconform.cuda import gpu_available

    ok, why = gpu_available()
    return None if ok else why


def _short(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= _EVIDENCE_CHARS else line[: _EVIDENCE_CHARS - 3] + "..."


def _not_run_here(line: str | None, stderr: str, verdict: bool) -> dict[str, Any] | None:
    """The record of a script that could not run here, from its verdict `line` (when `verdict`:
    the line agrees with its exit status) or else its standard error; None when it ran."""
    said = [line] if verdict and line else []
    if not verdict:
        said = [s for s in stderr.splitlines() if s.strip()][-_STDERR_LINES:]
    hint = next((s for s in reversed(said) if any(w in s.lower() for w in _NO_GPU_WORDS)), None)
    if hint is not None and (why := no_gpu()) is not None:
        return {
            "standalone": NOT_RUN,
            "result": "no GPU",
            "detail": "not run here (no GPU)",
            "evidence": f"{_short(why)}; the script said: {_short(hint)}",
        }
    if verdict:
        return None
    exceptions = [m for s in said if (m := _EXCEPTION_LINE.match(s))]
    last = exceptions[-1] if exceptions else None
    if last is not None and last.group(1).endswith(("ModuleNotFoundError", "ImportError")):
        module = _NO_MODULE.search(last.group(2))
        missing = module.group(1) if module else _short(last.group(0))
        return {
            "standalone": NOT_RUN,
            "result": "library missing",
            "detail": f"not run here (library missing: {missing})",
        }
    why = no_gpu()
    if why is not None:
        return {
            "standalone": NOT_RUN,
            "result": "no GPU",
            "detail": "not run here (no GPU)",
            "evidence": f"{_short(why)}; the script gave no verdict",
        }
    return None


def classify(
    returncode: int | None, stdout: str, stderr: str, timed_out: bool = False
) -> dict[str, Any]:
    """What one run of a standalone script says: `standalone`, `result`, `line` (its last
    BUG:/OK: line, the one that counts), `exit`, `signal` and `detail` (a sentence).

    The last line counts only with the exit status it promises (BUG: 1, OK: 0) and no timeout;
    otherwise the script gave no verdict. A script that could not run here (`_not_run_here`:
    a library missing, no GPU) is `not run here`, whatever else it did."""
    line = _verdict_line(stdout)
    out: dict[str, Any] = {"line": line, "exit": returncode, "signal": None}
    if BLOCKED in stderr:
        return {
            **out,
            "standalone": NONE,
            "result": "imports caiconform",
            "detail": "imported caiconform at run time (blocked)",
        }
    bug = not timed_out and returncode == 1 and line is not None and line.startswith("BUG:")
    ok = not timed_out and returncode == 0 and line is not None and line.startswith("OK:")
    not_run = _not_run_here(line, stderr, bug or ok)
    if not_run is not None:
        return {**out, **not_run}
    if bug:
        return {**out, "standalone": REPRODUCES, "result": "bug", "detail": line}
    if ok:
        return {**out, "standalone": DOES_NOT, "result": "ok", "detail": line}
    said = f"printed {line!r}" if line else "printed no BUG/OK line"
    if timed_out:
        return {
            **out,
            "standalone": NO_VERDICT,
            "result": "timeout",
            "detail": f"timed out; {said}",
        }
    if returncode is not None and returncode < 0:
        name = out["signal"] = _signal_name(-returncode)
        return {
            **out,
            "standalone": NO_VERDICT,
            "result": "signal",
            "detail": f"killed by {name}; {said}",
        }
    tail = [s for s in stderr.strip().splitlines() if s.strip()][-_STDERR_LINES:]
    last = f"; stderr ends: {tail[-1].strip()}" if tail else ""
    return {
        **out,
        "standalone": NO_VERDICT,
        "result": "error",
        "detail": f"exit status {returncode}, {said}{last}",
        "stderr_tail": "\n".join(tail),
    }


def run_script(script: Path, timeout_s: float) -> dict[str, Any]:
    """Run `script` once as `python -I -u` in an empty temporary directory with caiconform
    blocked; its process group is killed at `timeout_s`. The record of `classify` plus
    `seconds`."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="caiconform-verify-") as cwd:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-u", "-c", _BOOTSTRAP, _user_paths(), str(script.resolve())],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        timed_out = False
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            try:
                stdout, stderr = proc.communicate(timeout=_DRAIN_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = "", ""
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()
                proc.wait()
    record = classify(proc.returncode, stdout or "", stderr or "", timed_out)
    record["seconds"] = round(time.monotonic() - start, 2)
    return record


def _write_script(
    group: dict[str, Any], directory: Path, generate: Generator
) -> tuple[Path | None, dict[str, Any] | None]:
    """The group's script written to `directory`, or (None, the record saying why none)."""
    try:
        text = generate(group)
    except Exception as exc:  # a generator defect must not stop the other groups
        detail = f"the generator failed: {type(exc).__name__}: {exc}".splitlines()[0]
        return None, {"standalone": NONE, "result": "generator error", "detail": detail}
    if not text:
        return None, {"standalone": NONE, "result": "no script", "detail": "no script written"}
    path = directory / f"{standalone_key(group)}.py"
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    try:
        imported = caiconform_imports(text)
    except SyntaxError as exc:
        return path, {
            "standalone": NONE,
            "result": "generator error",
            "detail": f"the script does not parse: line {exc.lineno}: {exc.msg}",
        }
    if imported:
        return path, {
            "standalone": NONE,
            "result": "imports caiconform",
            "detail": f"imports {', '.join(sorted(set(imported)))}: not run",
        }
    return path, None


def _check_examples(groups: Sequence[Mapping[str, Any]]) -> None:
    for group in groups:
        if not group.get("count") or not (group.get("reproducer") or {}).get("cell"):
            raise VerifyInputError(
                f"finding {standalone_key(group)} has no examples to build a reproducer from"
            )


def _now() -> str:
    """The time now, UTC, to the second: what an entry's `at` says."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def newer_entry(kept: Mapping[str, Any] | None, fresh: Mapping[str, Any]) -> Mapping[str, Any]:
    """Which of two verify.json entries of one group stands: `fresh`, unless it could not run
    here (`not run here`) and `kept` is any other verification, or `kept` is dated after it
    (`at`, UTC; an entry without one is older than any dated one)."""
    if kept is None:
        return fresh
    if fresh.get("standalone") == NOT_RUN and kept.get("standalone") != NOT_RUN:
        return kept
    return kept if str(kept.get("at") or "") > str(fresh.get("at") or "") else fresh


def verify_groups(
    groups: Sequence[dict[str, Any]],
    run_dir: Path,
    generate: Generator,
    jobs: int = DEFAULT_JOBS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Callable[[int, int, dict[str, Any], dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Write, check and run the standalone script of each of `groups`, `jobs` at a time, and
    write `run_dir/verify.json`: each group's entry is the newer of this verification's and
    the one already there (`newer_entry`: one not run here keeps an earlier one), whose script
    is kept in `run_dir/standalone/`; the entries of other groups stay.

    Parameters: `generate` maps a findings.json group to its script text or None; `progress`
    is called as each group finishes with (done, total, group, record): this verification's
    record, with `kept`, the entry that stands, when that is an earlier one. Returns the
    content of verify.json, whose `not_run_here` names the groups this verification could not
    run here (with why). VerifyInputError for a group without examples (before anything runs)
    or a run directory that cannot be written.
    """
    if jobs < 1:
        raise VerifyInputError(f"--jobs must be at least 1, got {jobs}")
    if timeout_s <= 0:
        raise VerifyInputError(f"--timeout must be positive, got {timeout_s:g}")
    _check_examples(groups)
    previous = (load_verification(run_dir) or {}).get("groups") or {}
    directory = RunDir(run_dir).standalone
    start, at, python = time.monotonic(), _now(), sys.version.split()[0]
    results: dict[str, dict[str, Any]] = {}
    attempts: dict[str, dict[str, Any]] = {}
    staged: dict[str, Path] = {}
    total = len(groups)

    def finish(group: dict[str, Any], path: Path | None, record: dict[str, Any]) -> None:
        key = standalone_key(group)
        entry = {
            "library": group.get("library"),
            "role": group.get("role"),
            "rule": group.get("rule") or group.get("input_rule"),
            "severity": group.get("severity"),
            "script": f"{STANDALONE_DIR}/{path.name}" if path is not None else None,
            "seconds": 0.0,
            **record,
            "at": _now(),
            "python": python,
        }
        attempts[key] = entry
        stands = newer_entry(previous.get(key), entry)
        results[key] = dict(stands)
        if stands is entry and path is not None:
            staged[key] = path
        if progress is not None:
            kept = {} if stands is entry else {"kept": results[key]}
            progress(len(attempts), total, group, {**entry, **kept})

    with tempfile.TemporaryDirectory(prefix="caiconform-standalone-") as staging:
        try:
            directory.mkdir(exist_ok=True)
            written = [(g, *_write_script(g, Path(staging), generate)) for g in groups]
        except OSError as exc:
            raise VerifyInputError(f"cannot write {directory}: {exc.strerror or exc}") from None
        runnable = []
        for group, path, refused in _refuse_missing(written):
            if refused is not None or path is None:
                finish(group, path, refused or {})
            else:
                runnable.append((group, path))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(run_script, path, timeout_s): (g, path) for g, path in runnable}
            for future in as_completed(futures):
                group, path = futures[future]
                finish(group, path, future.result())
        try:  # the script of each entry that stands; an earlier entry keeps its own
            for path in staged.values():
                shutil.move(path, directory / path.name)
        except OSError as exc:
            raise VerifyInputError(f"cannot write {directory}: {exc.strerror or exc}") from None
    groups_out = {**previous, **results}
    verification = {
        "schema": SCHEMA,
        "at": at,
        "python": python,
        "jobs": jobs,
        "timeout_s": timeout_s,
        "verified": total,
        "not_run_here": {
            k: e["detail"] for k, e in sorted(attempts.items()) if e["standalone"] == NOT_RUN
        },
        "seconds": round(time.monotonic() - start, 2),
        "summary": _summary(groups_out.values()),
        "groups": dict(sorted(groups_out.items())),
    }
    path = RunDir(run_dir).verify
    try:
        path.write_text(json.dumps(verification, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise VerifyInputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return verification


def _refuse_missing(
    written: list[tuple[dict[str, Any], Path | None, dict[str, Any] | None]],
) -> list[tuple[dict[str, Any], Path | None, dict[str, Any] | None]]:
    """`written` (group, script, why it is not run) with the scripts whose imports a fresh
    `python -I` cannot find (`missing_modules`) refused: not run here, library missing."""
    needs = {
        id(group): imported_modules(path.read_text(encoding="utf-8"))
        for group, path, refused in written
        if refused is None and path is not None
    }
    missing = missing_modules(name for names in needs.values() for name in names)
    out = []
    for group, path, refused in written:
        absent = {n for n in needs.get(id(group), []) if n in missing}
        absent = sorted(n for n in absent if not any(n.startswith(f"{a}.") for a in absent))
        if refused is None and absent:
            refused = {
                "standalone": NOT_RUN,
                "result": "library missing",
                "detail": f"not run here (library missing: {', '.join(absent)})",
            }
        out.append((group, path, refused))
    return out


def _summary(entries: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    entries = list(entries)
    results: dict[str, int] = {}
    for e in entries:
        results[str(e.get("result"))] = results.get(str(e.get("result")), 0) + 1
    return {
        **{status: sum(e.get("standalone") == status for e in entries) for status in STATUSES},
        "results": dict(sorted(results.items())),
    }


def load_verification(run_dir: str | Path) -> dict[str, Any] | None:
    """`run_dir/verify.json`, or None when the run was never verified. VerifyInputError when
    it cannot be read or is not a verification."""
    path = RunDir(run_dir).verify
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VerifyInputError(f"{path}: cannot be read: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise VerifyInputError(f"{path}: not a verification (schema {SCHEMA} expected)")
    return data


def annotate(
    groups: Iterable[dict[str, Any]],
    verification: Mapping[str, Any] | None,
    run_dir: str | Path | None = None,
) -> None:
    """Set each group's `standalone` to its verify.json entry (None: not verified), with
    `script_path`, its script's path under `run_dir` (the directory verify.json is in). An
    entry `not run here` verified nothing: the group's `standalone` is None and
    `standalone_not_run` holds that entry (`status_line` says why it is not verified)."""
    entries = (verification or {}).get("groups") or {}
    for group in groups:
        entry = entries.get(standalone_key(group))
        group.pop("standalone_not_run", None)
        if entry is not None:
            entry = dict(entry)
            if entry.get("script") and run_dir is not None:
                entry["script_path"] = str(Path(run_dir) / entry["script"])
            if entry.get("standalone") == NOT_RUN:
                group["standalone_not_run"], entry = entry, None
        group["standalone"] = entry


def status_line(group: Mapping[str, Any]) -> str | None:
    """What the verification says of an annotated group, in one phrase (None: not verified):
    "reproduces standalone ... (BUG: ..., 3.1 s)", "not verified: not run here (...)", or one
    starting "UNCONFIRMED:"."""
    entry = group.get("standalone")
    if not entry:
        not_run = group.get("standalone_not_run")
        return f"not verified: {not_run.get('detail')}" if not_run else None
    status = entry.get("standalone")
    if status == REPRODUCES:
        return (
            f"reproduces standalone in a fresh process without caiconform ({entry.get('line')}, "
            f"{entry.get('seconds')} s)"
        )
    if status == DOES_NOT:
        return f"UNCONFIRMED: the standalone script does not reproduce it ({entry.get('detail')})"
    if status == NO_VERDICT:
        return f"UNCONFIRMED: the standalone script gave no verdict ({entry.get('detail')})"
    return f"UNCONFIRMED: no standalone reproducer ({entry.get('detail')})"


def generator(required: bool = False) -> Generator | None:
    """`caiconform.report.standalone.script_for_group`, or None when that module is not
    installed (VerifyInputError instead when `required`, or when it fails to import)."""
    try:
        from caiconform.report.standalone import script_for_group
    except ImportError as exc:
        if required or exc.name != "caiconform.report.standalone":
            raise VerifyInputError(
                f"the standalone reproducer generator cannot be imported: {exc}"
            ) from None
        return None
    return script_for_group


def standalone_script(group: Mapping[str, Any], run_dir: Path | None) -> tuple[str | None, str]:
    """The standalone script of `group` and a phrase saying where it comes from: the file
    verified (verify.json's `script`), else one generated now (not run), else (None, why
    there is none)."""
    entry = group.get("standalone") or {}
    path = entry.get("script_path") or (
        run_dir / entry["script"] if entry.get("script") and run_dir is not None else None
    )
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError:
            text = None
        if text is not None:
            ran = "exit" in entry  # a script refused before running has no exit status
            return text, f"`{entry['script']}`, the script " + (
                "that was run" if ran else "written, not run"
            )
    try:
        generate = generator()
    except VerifyInputError as exc:
        return None, str(exc)
    if generate is None:
        return None, "no standalone reproducer: the generator is not installed"
    try:
        text = generate(dict(group))
    except Exception as exc:  # the generator's defect: say so, keep the rest of the text
        return None, f"no standalone reproducer: the generator failed: {type(exc).__name__}"
    if not text:
        return None, "no standalone reproducer could be written for this finding"
    try:
        if caiconform_imports(text):
            return None, "no standalone reproducer: the generated script imports caiconform"
    except SyntaxError:
        return None, "no standalone reproducer: the generated script does not parse"
    return text, "generated from the finding, not yet run"
