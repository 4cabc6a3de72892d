"""Write the standalone reproducers of a findings.json into a folder, for running elsewhere:

    python -m caiconform.report.standalone FINDINGS.json DIR [--all]

One script per group at or above refuses-valid (every group with --all), named
`<index>-<family>-<library>-<rule>.py`, and `manifest.tsv` listing each group (index, family,
library, role, rule, outcome, severity, script or the reason there is none). Exit 2 for an
unreadable findings file. scripts/gpu_standalone.sh runs the folder on a GPU machine.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from caiconform.report.standalone import script_for_group, why_none

AT_OR_ABOVE = ("corrupts", "crashes", "refuses-valid")


def _name(index: int, group: dict) -> str:
    family = (group.get("reproducer") or {}).get("cell", "-/").split("/")[0]
    rule = group.get("rule") or group.get("input_rule") or "-"
    raw = f"{index:03d}-{family}-{group.get('library')}-{rule}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", raw) + ".py"


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--all"]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        groups = json.loads(Path(args[0]).read_text())["groups"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"cannot read groups from {args[0]}: {exc}", file=sys.stderr)
        return 2
    out = Path(args[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for index, group in enumerate(groups):
        if "--all" not in argv and group.get("severity") not in AT_OR_ABOVE:
            continue
        family = (group.get("reproducer") or {}).get("cell", "-/").split("/")[0]
        text = script_for_group(group)
        if text is None:
            where = f"none: {why_none(group) or 'no template covers it'}"
        else:
            where = _name(index, group)
            (out / where).write_text(text)
        fields = (
            index,
            family,
            group.get("library"),
            group.get("role"),
            group.get("rule") or group.get("input_rule"),
            group.get("outcome"),
            group.get("severity"),
            where,
        )
        rows.append("\t".join(str(f) for f in fields))
    (out / "manifest.tsv").write_text(
        "index\tfamily\tlibrary\trole\trule\toutcome\tseverity\tscript\n" + "\n".join(rows) + "\n"
    )
    written = sum(1 for r in rows if "\tnone: " not in r)
    print(f"{written} scripts for {len(rows)} groups in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
