"""Print the reproducer scripts a run's findings.json cites (one path per line, relative to the
run directory), for the GPU scripts to bring back those and not the thousands of others.

Usage: python3 scripts/cited_repros.py RUN_DIR
"""

import json
import sys
from pathlib import Path

catalogue = json.loads((Path(sys.argv[1]) / "findings.json").read_text(encoding="utf-8"))
for group in catalogue["groups"]:
    if group["reproducer"].get("repro"):
        print(group["reproducer"]["repro"])
