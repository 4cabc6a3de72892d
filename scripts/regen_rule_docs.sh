#!/usr/bin/env bash
# Regenerate the rule tables kept in docs/ from the catalogue (tests/test_rules.py and
# tests/test_rule_coverage.py keep them equal to it): docs/derived-rules.md's table
# (`caiconform rules --derived --markdown`, replacing the file's table from its header row on)
# and docs/coverage.md (`caiconform rules --coverage RUN --markdown`, RUN: the run it counts).
set -euo pipefail
run=${1:-reports/latest}
python3 - <<'PY'
import subprocess, pathlib
p = pathlib.Path("docs/derived-rules.md")
text = p.read_text()
lines = text.splitlines(keepends=True)
start = next(i for i, l in enumerate(lines) if l.startswith("| Rule") or l.startswith("| ID"))
table = subprocess.run(["python3", "-c", "from caiconform.cli import main; main()", "rules", "--derived", "--markdown"], check=True,
                       capture_output=True, text=True).stdout
p.write_text("".join(lines[:start]) + table[table.index("|"):])
PY
python3 -c "from caiconform.cli import main; main()" rules --coverage "$run" --markdown > /tmp/coverage.md
# keep the hand-written paragraph on where the counts come from (between the summary and the table)
python3 - <<'PY'
import pathlib
old = pathlib.Path("docs/coverage.md").read_text()
new = pathlib.Path("/tmp/coverage.md").read_text()
note = old[old.index("Example counts are from"):old.index("| Rule |")] if "Example counts are from" in old else ""
i = new.index("| Rule |")
pathlib.Path("docs/coverage.md").write_text(new[:i] + note + new[i:])
PY
