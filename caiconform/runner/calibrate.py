"""Streams spins calibrated to the machine at hand: the shortest spin at which the race control
still sees sentinels, times a safety factor, rather than one fixed spin for every machine.

The streams family (and the adapters' pending-work scenarios) delay a producer's final write
behind a delay on its stream (`caiconform.cuda.spin`); a consumer that does not synchronize must read the sentinel within that
spin. Too short, and a non-syncing consumer passes by luck; too long, and every example waits
for nothing. `calibrate_spin` tries spins from short to long, each `repeats` times, with
`measure(delay_us)` (on a GPU, `streams.race_visible`: sentinels read by a consumer ignoring the
stream, and by one syncing on an `unsynced` export); the first spin at which most measures
(REQUIRED of REPEATS) see both races, times `safety`, clamped to [MIN_SPIN_US, MAX_SPIN_US], is
the run's spin. Most, not all: the calibration runs at the run's start, beside the probes and the
workers' starts, and one measure in three missed the race there at 500, 2,000 and 5,000 us alike
(a host thread held up for milliseconds): requiring all would calibrate a spin twenty times
longer for one stalled measure, and a slower run with the same finding groups
(docs/performance.md). A spin too short misses every time, not once.

The runner calibrates once per run, in a worker, when it has streams cells on a GPU
(`calibrate_here`); the result is saved in `run.json` (`spin_calibration`, reused by
`--resume`) and handed to every worker as SPIN_ENV (or, to workers started before it ended, in
the file SPIN_FILE_ENV names), which `adapters._staging.spin_us` reads (the
adapters' spin) and `checks.streams.spin_of` scales the reference producer's drawn `delay_us`
by (the drawn params stay the same on every machine, so one seed draws the same examples).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "SPIN_ENV",
    "SPIN_FILE_ENV",
    "SPIN_FILE",
    "CANDIDATES_US",
    "Calibration",
    "calibrate_spin",
    "calibrate_here",
]

#: environment variable carrying the calibrated spin (µs) to the workers
SPIN_ENV = "CAICONFORM_SPIN_US"
#: or the file holding it, for workers started before the calibration ended (read at use);
#: the runner's is `<out>/workers/SPIN_FILE`
SPIN_FILE_ENV = "CAICONFORM_SPIN_FILE"
SPIN_FILE = "spin_us"
#: spins tried, shortest first (µs)
CANDIDATES_US = (250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 150_000)
#: how many measures are taken at one spin, and how many of them must see the race
REPEATS = 3
REQUIRED = 2
#: the spin used is the shortest visible one times this
SAFETY = 4.0
MIN_SPIN_US = 2_000
MAX_SPIN_US = 150_000


@dataclass
class Calibration:
    """What a calibration found: `spin_us` to use (None: no spin showed the race, keep the
    fixed spins), the shortest visible spin, and every measure taken."""

    spin_us: int | None
    shortest_us: int | None
    safety: float
    measurements: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _visible(measure: dict[str, Any]) -> bool:
    return measure.get("ignore_stream", 0) > 0 and measure.get("unsynced_export", 0) > 0


def calibrate_spin(
    measure: Callable[[int], dict[str, Any]],
    *,
    candidates: Sequence[int] = CANDIDATES_US,
    repeats: int = REPEATS,
    required: int = REQUIRED,
    safety: float = SAFETY,
    lowest: int = MIN_SPIN_US,
    highest: int = MAX_SPIN_US,
) -> Calibration:
    """The shortest of `candidates` at which `required` of `repeats` calls of
    `measure(delay_us)` see both races (`ignore_stream` and `unsynced_export` sentinels > 0),
    times `safety`, clamped to [`lowest`, `highest`]; a spin's measures stop once it has
    `required` or can no longer reach it. A measure that raises ends the calibration with no
    spin."""
    if not 1 <= required <= repeats or safety < 1 or not candidates or lowest > highest:
        raise ValueError(
            f"got repeats={repeats}, required={required}, safety={safety}, {len(candidates)} "
            f"candidates, range [{lowest}, {highest}]; expected 1 <= required <= repeats, "
            f"safety >= 1, candidates, lowest <= highest"
        )
    taken: list[dict[str, Any]] = []
    for delay in sorted(candidates):
        seen = missed = 0
        while seen < required and missed <= repeats - required:
            try:
                result = dict(measure(delay))
            except Exception as exc:
                return Calibration(
                    None, None, safety, taken, f"measure at {delay} us raised {exc!r}"
                )
            taken.append({"delay_us": delay, **result})
            if _visible(result):
                seen += 1
            else:
                missed += 1
        if seen >= required:
            spin = int(min(highest, max(lowest, delay * safety)))
            return Calibration(spin, delay, safety, taken)
    return Calibration(None, None, safety, taken, "no spin tried showed the race")


def calibrate_here() -> dict[str, Any]:
    """Calibrate on this machine's GPU (run in a worker); `spin_us` None with the reason when
    there is no GPU."""
    from caiconform.cuda import gpu_available

    ok, why = gpu_available()
    if not ok:
        return Calibration(None, None, SAFETY, reason=f"no GPU: {why}").to_dict()
    from caiconform.checks.streams import race_visible

    return calibrate_spin(lambda delay: race_visible(delay)).to_dict()
