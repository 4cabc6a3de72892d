"""streams suite's control: pending work on the exported stream is visible to a read that does
not wait (the family's cells are items of `test_families.py`).

reference -> consumer: the consumer must synchronize on the exported stream
[CAI-SYNC-CONSUMER]; producer -> reference: the stream the producer exports must cover its
pending work [CAI-SYNC-PRODUCER-SUFFICIENT]; other pairs must not race [CAI-SYNC-RACE-FREE].
`test_race_is_visible` is the control that makes a pass mean something: on this machine an
unsynchronized read does see the sentinel.
"""

from __future__ import annotations

import pytest


@pytest.mark.gpu
def test_race_is_visible() -> None:
    from caiconform.cuda import gpu_available
    from caiconform.runner.pool import Worker

    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"needs a GPU: {why}")
    worker = Worker()
    try:
        seen = worker.call("caiconform.checks.streams:race_visible", timeout=120.0)
    finally:
        worker.close()
    assert seen["ignore_stream"] > 0, f"no sentinel read without synchronizing: {seen}"
    assert seen["unsynced_export"] > 0, f"no sentinel read from an unsynced export: {seen}"
