"""Numba's stream rules on a GPU (`caiconform.checks._numba_streams`, the streams family's Numba
scenarios): numba-cuda 0.30.4 synchronizes on every imported stream (two at a kernel launch),
takes it as the array's default stream, does not wait when stream is None, and honours
CUDA_ARRAY_INTERFACE_SYNC=0 and sync=False; the environment variable in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from caiconform.cuda import gpu_available

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]

try:
    import numba.cuda  # noqa: F401

    NUMBA, NO_NUMBA = True, ""
except Exception as exc:
    NUMBA, NO_NUMBA = False, f"numba-cuda not importable: {exc}"
needs_numba = pytest.mark.skipif(not NUMBA, reason=NO_NUMBA)

IMPORTS = ("numba-sync", "numba-stream-none", "numba-sync-off")


def _params(scenario: str) -> dict:
    return {
        "stream_scenario": scenario,
        "delay_us": 50_000,
        "typestr": "<f4",
        "shape": [64],
        "seed": 0,
    }


@needs_numba
@pytest.mark.parametrize("consumer", ["numba", "numba-from-cai", "numba-kernel"])
@pytest.mark.parametrize("scenario", IMPORTS)
def test_numba_imports_keep_numba_s_stream_rules(consumer, scenario):
    from caiconform.checks import streams

    result = streams.execute(_params(scenario), "reference", consumer)
    assert result.outcome == "pass", result.message


@needs_numba
def test_a_numba_import_that_does_not_wait_is_caught_live():
    """The control: with the config switched off, the sync check itself must see the pending
    streams (else its passes prove nothing)."""
    from caiconform.checks import _numba_streams as ns
    from caiconform.checks.streams import spin_of

    importer = ns.NumbaImporter("numba")
    with importer.sync_config(False):
        result = ns.check_sync(importer, ns.LiveWorld(), 64, spin_of(50_000))
    assert result.outcome == "fail" and result.rule == "CAI-NUMBA-CONSUMER-SYNC", result.message


@needs_numba
def test_numba_export_names_each_default_stream_and_the_verdict_follows_the_dict():
    """numba-cuda 0.30.4 exports int(Stream): cuda.default_stream()'s handle is 0, which the
    CAI forbids; the check must say CAI-STREAM-ZERO-FORBIDDEN exactly when a dict says 0."""
    from caiconform.checks import _numba_streams as ns

    exports = ns.numba_exports(64)
    others = [e for e in exports if "default_stream()" not in e[0]]
    assert ns.check_export(others).outcome == "pass", ns.check_export(others).message
    result = ns.check_export(exports)
    zero = [made for made, exported, _ in exports if exported == 0]
    if zero:
        assert result.outcome == "fail" and result.rule == "CAI-STREAM-ZERO-FORBIDDEN"
        assert "default_stream()" in result.message
    else:
        assert result.outcome == "pass", result.message


@needs_numba
def test_the_environment_variable_stops_numba_waiting_in_a_fresh_process():
    """NUMBA_CUDA_ARRAY_INTERFACE_SYNC=0, as a user writes it, read by numba at start-up."""
    code = (
        "from caiconform.checks import _numba_streams as ns\n"
        "from caiconform.checks.streams import spin_of\n"
        "from numba.cuda.core import config\n"
        "importer = ns.NumbaImporter('numba')\n"
        "r = ns.check_none(importer, ns.LiveWorld(), 64, spin_of(50_000))\n"
        "s = ns.check_sync(importer, ns.LiveWorld(), 64, spin_of(50_000))\n"
        "print(config.CUDA_ARRAY_INTERFACE_SYNC, r.outcome, s.outcome, s.rule)\n"
    )
    env = dict(os.environ, NUMBA_CUDA_ARRAY_INTERFACE_SYNC="0")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180
    )
    assert out.returncode == 0, out.stderr
    # with the variable set, check_sync sees Numba not waiting: its CAI-NUMBA-CONSUMER-SYNC fails
    assert out.stdout.split() == ["0", "pass", "fail", "CAI-NUMBA-CONSUMER-SYNC"]
