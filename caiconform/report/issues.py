"""A catalogue group as the text of a bug report for the library at fault.

A finding is only worth something when its library's maintainers can act on it: the rule's own
words and where the specification says them, what happened and under which condition (with the
passing neighbour that isolates it), how often and where it was seen, why this library and not
its partner is the culprit, the versions and machine, and a reproducer that runs on its own.
`render_issue(group, run)` writes exactly that, as Markdown, from one `findings.json` group
(`caiconform.results.catalogue`) and the run it came from (`report.load.Run`: its env.json and
the reproducer script the group cites): the standalone reproducer inline
(`caiconform.report.verify`), whether it reproduced, and a known upstream report
(`caiconform.report.upstream`) when the group is annotated with them. `caiconform findings`
prints or writes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from caiconform.results.severity import HARM
from caiconform.results.wording import broken_input, folded_phrase, group_level, group_phrase
from caiconform.spec.rules import RULES, level_text

__all__ = ["render_issue", "select_groups", "LEVEL_ORDER"]

#: levels from most to least binding; `--level X` keeps X and everything above it
LEVEL_ORDER = ("MUST", "SHOULD", "PORTABILITY", "MAY")
#: cells listed by name in an issue; the rest are counted
_CELLS_SHOWN = 6


def select_groups(
    groups: list[dict[str, Any]],
    library: str | None = None,
    level: str | None = None,
    severities: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """The findings of `library` (None: all, ambiguous ones included) at `level` or above and
    of one of `severities` (None: any), in the catalogue's order (each library's most severe
    first); a group folded into another (`results.fold`) is left to its lead."""
    keep = LEVEL_ORDER[: LEVEL_ORDER.index(level) + 1] if level else None
    out = []
    for group in groups:
        if group.get("folded_into"):
            continue  # one more rule of a bug its lead's text names
        if library is not None and group.get("library") != library:
            continue
        if severities is not None and group.get("severity") not in severities:
            continue
        group_level = group.get("level") or _input_level(group)
        if keep is not None and group_level not in keep:
            continue
        out.append(group)
    return out


def _input_level(group: dict[str, Any]) -> str | None:
    """A crash on input that breaks a rule is judged at that rule's level."""
    rule = RULES.get(group.get("input_rule") or "")
    return rule.level.value if rule else None


def _title(group: dict[str, Any]) -> str:
    if broken_input(group):  # said alike for every outcome (results.wording)
        return group_phrase(group, count=False)
    library = group.get("library") or "(no single library)"
    rule = group.get("rule")
    level = group_level(group)
    what = {
        "fail": "breaks",
        "accepted-invalid": "accepts a dict that breaks",
        "rejected-valid": "refuses a valid export",
        "crash": "crashes the process",
        "hang": "hangs",
        "poisoned": "leaves a sticky CUDA error",
    }.get(group.get("outcome"), group.get("outcome"))
    if rule and group.get("outcome") in ("rejected-valid", "crash", "hang", "poisoned"):
        return f"{library} ({group.get('role')}) {what} [{rule}, {level}]"
    if rule:
        return f"{library} ({group.get('role')}) {what} {rule} ({level})"
    on = f" on input that breaks {group['input_rule']}" if group.get("input_rule") else ""
    return f"{library} ({group.get('role')}) {what}{on}"


def _rule_text(rule_id: str | None, prefix: str = "Rule") -> list[str]:
    rule = RULES.get(rule_id or "")
    if rule is None:
        return []
    spec, _, anchor = rule.section.partition("#")
    return [
        f"**{prefix}** `{rule.id}` ({level_text(rule)}, {rule.side.value} side, CAI versions "
        f"{', '.join(map(str, rule.versions)) or '-'}; `{rule.spec_file}`, section "
        f'"{anchor}"):',
        "",
        f"> {rule.text}",
        "",
        f'The specification\'s sentence: "{rule.quote}"',
        "",
    ]


def _environment(group: dict[str, Any], env: dict[str, Any]) -> list[str]:
    lines = []
    python = (env.get("python") or {}).get("version")
    gpu = env.get("gpu") or {}
    devices = ", ".join(d.get("name", "?") for d in gpu.get("devices") or []) or "no GPU"
    driver = gpu.get("driver_version")
    machine = f"Python {python or '?'}, {devices}" + (f", driver {driver}" if driver else "")
    lines.append(f"- machine: {machine}")
    libraries = env.get("libraries") or {}
    cell = (group.get("reproducer") or {}).get("cell") or ""
    names = [n for n in cell.split("/")[1:] if n and n != "-"]
    wanted = {"numpy", "caiconform", "cuda-bindings", "cuda-core"}
    for name in names:
        wanted |= {name, name.split("-")[0], name.replace(".", "-")}
    shown = [
        f"{dist} {version}"
        for dist, version in sorted(libraries.items())
        if version and any(dist == w or dist.startswith(w + "-") for w in wanted)
    ]
    if group.get("version"):
        from caiconform.results.catalogue import DISTRIBUTION

        library, version = group.get("library"), group["version"]
        dist = DISTRIBUTION.get(library, library)
        first = f"{library} {version}" if dist == library else f"{library}: {dist} {version}"
        shown = [first, *(v for v in shown if v != f"{dist} {version}")]
    if shown:
        lines.append("- versions: " + ", ".join(shown))
    return lines


def _standalone(group: dict[str, Any], run_dir: Path | None) -> tuple[list[str], bool]:
    """The standalone reproducer inline (caiconform.report.verify.standalone_script), and
    whether there is one."""
    from caiconform.report.verify import standalone_script

    script, origin = standalone_script(group, run_dir)
    if script is None:
        return [f"**Standalone reproducer**: {origin}.", ""], False
    return [
        f"**Standalone reproducer** ({origin}; it imports only numpy and the libraries "
        "involved, prints `BUG: ...` or `OK: ...` and exits 1 or 0):",
        "",
        "```python",
        script.rstrip(),
        "```",
        "",
    ], True


def _verified(group: dict[str, Any]) -> list[str]:
    """Whether the standalone reproducer reproduced the finding, whether it is already
    reported upstream, and since which release it is seen (the group as `caiconform findings`
    annotates it)."""
    from caiconform.report.releases import since_line
    from caiconform.report.verify import status_line
    from caiconform.results.wording import known_line

    lines = []
    status = status_line(group)
    if status is not None:
        lines += [f"**Standalone**: {status}.", ""]
    known = known_line(group)
    if known:
        lines += [f"**Known upstream**: {known}.", ""]
    dated = since_line(group)
    if dated:
        lines += [f"**Across releases**: {dated}.", ""]
    return lines


def _reproducer(group: dict[str, Any], run_dir: Path | None, standalone: bool = False) -> list[str]:
    repro = group.get("reproducer") or {}
    lines = [f"Cell `{repro.get('cell')}`, example parameters: `{repro.get('params')}`", ""]
    path = repro.get("repro")
    if not path:
        return [*lines, "(no reproducer script was written for this example)"]
    if standalone:
        return [
            *lines,
            f"caiconform's own reproducer of this example: `{path}` (needs caiconform).",
        ]
    script = None
    if run_dir is not None:
        try:
            script = (run_dir / path).read_text(encoding="utf-8")
        except OSError:
            script = None
    shrunk = " (hypothesis's minimal example)" if repro.get("shrunk") else ""
    if script is None:
        return [*lines, f"Reproducer `{path}`{shrunk} (not found next to the run)."]
    return [
        *lines,
        f"Reproducer `{path}`{shrunk} (runs on its own where caiconform is installed):",
        "",
        "```python",
        script.rstrip(),
        "```",
    ]


def _severity(group: dict[str, Any]) -> list[str]:
    """How much harm the defect does, apart from the rule's level (docs/reports.md)."""
    severity = group.get("severity")
    if group.get("about_input"):
        return [
            f"**About the input**: the dict breaks `{broken_input(group)}`, which a consumer "
            "cannot check from the dict alone; what it did with it is information about the "
            "input (the producer's obligation), not a defect of "
            f"{group.get('library') or 'the consumer'}.",
            "",
        ]
    if not severity:
        return []
    harm = HARM.get(severity, "")
    level = group.get("level") and group_level(group, quote=True)
    apart = (
        f" The rule's level is {level}; the severity is the harm, read from what happened."
        if level
        else ""
    )
    lines = [f"**Severity**: `{severity}`: {harm}.{apart}", ""]
    if group.get("bound"):
        lines += [
            f"**Bounded by the text** (harm seen: `{group.get('harm')}`): {group['bound']}.",
            "",
        ]
    folded = folded_phrase(group)
    if folded:
        lines += [f"**One bug, several rules**: {folded}.", ""]
    triage = group.get("triage")
    if triage:
        lines += [f"**Triage** ({triage['verdict']}): {triage['reason']}", ""]
    return lines


def _reproduced(reproduced: bool | None) -> list[str]:
    if reproduced is None:
        return []
    if reproduced:
        return ["**Reproduced**: the first example gave the same result when run again.", ""]
    return [
        "**Not reproduced**: the first example gave another result when run again; confirm it "
        "before filing.",
        "",
    ]


def render_issue(group: dict[str, Any], envs: dict[str, Any], dirs: dict[str, Path]) -> str:
    """The Markdown text of a bug report for one catalogue group."""
    run_id = str((group.get("reproducer") or {}).get("run_id"))
    lines = [f"## {_title(group)}", ""]
    lines += _verified(group)
    lines += _severity(group)
    lines += _rule_text(group.get("rule"))
    if not group.get("rule"):
        lines += _rule_text(group.get("input_rule"), prefix="The input breaks")
    lines += ["**What happens**:", "", f"> {group.get('message')}", ""]
    condition = "; ".join(filter(None, [group.get("condition"), group.get("contrast")]))
    if condition:
        lines += [f"**When**: {condition}.", ""]
    cells = group.get("cells") or []
    listed = ", ".join(f"`{c}`" for c in cells[:_CELLS_SHOWN])
    more = f" and {len(cells) - _CELLS_SHOWN} more" if len(cells) > _CELLS_SHOWN else ""
    lines += [
        f"**Seen**: {group.get('count')} example(s) in {len(cells)} cell(s): {listed}{more}"
        f" (families: {', '.join(group.get('checks') or []) or '-'}).",
        "",
    ]
    culprit = group.get("library")
    why = group.get("why") or ""
    lines += [
        f"**Why {culprit}**: {why}." if culprit else f"**No single culprit**: {why}.",
        "",
    ]
    lines += _reproduced(group.get("reproduced"))
    lines += ["**Environment**:", "", *_environment(group, envs.get(run_id) or {}), ""]
    standalone, found = _standalone(group, dirs.get(run_id))
    lines += standalone
    lines += _reproducer(group, dirs.get(run_id), standalone=found)
    return "\n".join(lines).rstrip() + "\n"
