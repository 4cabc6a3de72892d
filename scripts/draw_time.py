"""How long hypothesis takes to draw one cell's examples (issue 11's 1,000-examples goal): a
cell of each of seven families at 100 and 1,000 examples, in this process (as one prefetch
process draws them, `runner.prefetch.draw_cell`), seed 11. Needs no GPU.
Usage: python scripts/draw_time.py [OUT.json]"""

from __future__ import annotations

import json
import sys
import time

from caiconform.runner.prefetch import draw_cell

CELLS = [
    ("roundtrip", "reference", "cupy"),
    ("streams", "torch", "jax"),
    ("adversarial", None, "cupy"),
    ("zero_size", "cupy", "torch"),
    ("schema", "torch", None),
    ("mask", None, "cupy"),
    ("agreement", None, "cupy"),
]


def main() -> int:
    out = {}
    for family, producer, consumer in CELLS:
        for n in (100, 1000):
            started = time.perf_counter()
            drawn, error = draw_cell(f"caiconform.checks.{family}", producer, consumer, 11, n)
            seconds = round(time.perf_counter() - started, 2)
            key = f"{family}/{producer or '-'}/{consumer or '-'}/{n}"
            out[key] = {"drawn": len(drawn), "seconds": seconds, "error": error}
            print(key, len(drawn), seconds, error or "", flush=True)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
