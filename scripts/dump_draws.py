"""Every cell's drawn examples, as the runner draws them (`prefetch.draw_cell`, the cell's own
seed from the run's), dumped to JSON with the CPU time the draws took: to check that a change
to the strategies draws the same examples (compare two dumps with `cmp`) and what it costs.
  python scripts/dump_draws.py CELLS_JSONL OUT.json [--seed 11] [--max-examples 100]
CELLS_JSONL: a run's cells.jsonl (or .gz), whose run cells are drawn in its order.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cells", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--max-examples", type=int, default=100)
    args = parser.parse_args()
    from caiconform.runner.driver import _cell_seed
    from caiconform.runner.prefetch import draw_cell
    from caiconform.runner.protocol import canonical

    opener = gzip.open if args.cells.suffix == ".gz" else open
    with opener(args.cells, "rt") as fh:
        keys = [c["cell"] for c in map(json.loads, fh) if "skipped" not in c]
    drawn: dict[str, list[str]] = {}
    started = time.process_time()
    for key in keys:
        family, producer, consumer = (None if part == "-" else part for part in key.split("/"))
        examples, error = draw_cell(
            f"caiconform.checks.{family}",
            producer,
            consumer,
            _cell_seed(args.seed, key),
            args.max_examples,
        )
        drawn[key] = [canonical(example) for example in examples] + [str(error)]
    took = time.process_time() - started
    args.out.write_text(json.dumps(drawn))
    count = sum(len(v) - 1 for v in drawn.values())
    print(f"{len(keys)} cells, {count} examples drawn in {took:.1f} s of CPU", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
