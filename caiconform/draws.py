"""Hypothesis draws that depend on the seed alone.

Hypothesis's default provider draws about one value in twenty (integers, floats, strings, bytes)
from a pool of constants it collects from every *local* module in `sys.modules`: any module
outside site-packages and the standard library, test files excepted. With caiconform installed
editable that is all of caiconform, plus any adapter source or family module of the user's. The
pool grows as modules are imported, so one seed draws different examples in processes that
imported different modules, or in one process before and after a lazy import. The runner needs
the same examples for the same seed everywhere: `--resume` replays a killed run's examples from
its journal, shrinking replays explore's examples from a cache, and a run's examples must be
redrawable elsewhere. So the runner draws inside `seed_only_draws()`, which leaves the drawing
thread no local constants; hypothesis's built-in constants stay, as they depend on nothing.

The pool is private to hypothesis (`hypothesis.internal.conjecture.providers`), with no setting
to turn it off; a hypothesis without it has nothing to pin, and the context is then a no-op.

`draw_examples` draws a cell's explore examples up front, so the runner can hand them to several
workers: the test function never fails and its result does not steer generation, so the list
is exactly what an explore that ran each example as it was drawn would have seen.

It lives beside `caiconform.strategies`, below the check families and the runner, because both
draw with it: the runner its cells' examples, and the adversarial family the minimal mutants of
its floor (`checks.adversarial`), drawn exactly as the runner draws them. It needs nothing of
caiconform.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis.internal.conjecture import providers
from hypothesis.strategies import SearchStrategy

__all__ = ["seed_only_draws", "hypothesis_settings", "draw_examples"]

#: hypothesis's collector of local constants (None: this hypothesis has no such pool)
_COLLECT = getattr(providers, "_get_local_constants", None)

_lock = threading.Lock()
#: seed_only_draws() contexts open in all threads; ours replaces the collector while any is
_open = 0
#: per thread: how deep in seed_only_draws() it is
_thread = threading.local()


def _local_constants():
    """The collector while any thread draws seed-only: none for such a thread, hypothesis's
    own for the others."""
    if getattr(_thread, "depth", 0):
        from hypothesis.internal.constants_ast import Constants

        return Constants()
    return _COLLECT()


def _forget_cached_constants() -> None:
    """Drop the constants hypothesis cached per choice type and bounds (for this thread): those
    cached outside the context hold local constants, those cached inside hold none."""
    providers.CONSTANTS_CACHE.cache.clear()


@contextmanager
def seed_only_draws() -> Iterator[None]:
    """Within this context, hypothesis draws in this thread depend only on the test's seed and
    settings, not on which modules the process has imported. Other threads draw as usual."""
    global _open
    if _COLLECT is None:
        yield
        return
    with _lock:
        _open += 1
        providers._get_local_constants = _local_constants
    depth = getattr(_thread, "depth", 0)
    _thread.depth = depth + 1
    if depth == 0:
        _forget_cached_constants()
    try:
        yield
    finally:
        _thread.depth = depth
        if depth == 0:
            _forget_cached_constants()
        with _lock:
            _open -= 1
            if _open == 0:
                providers._get_local_constants = _COLLECT


def hypothesis_settings(max_examples: int, phases: tuple[Phase, ...]) -> settings:
    """The settings of every runner test: no database, no deadline, quiet, every health check
    off (a slow GPU example is not a flaky test)."""
    return settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        phases=phases,
        derandomize=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        print_blob=False,
    )


def draw_examples(
    strategy: SearchStrategy, run_seed: int, max_examples: int
) -> tuple[list[Any], Exception | None]:
    """(examples, error): what hypothesis's generate phase yields for `strategy` under
    `run_seed`, in order (duplicates included: hypothesis may map two choice sequences to equal
    params), drawn seed-only. `error` is what stopped hypothesis early (Unsatisfiable, a
    strategy bug), with the examples drawn before it."""
    drawn: list[Any] = []

    @hypothesis_settings(max_examples, (Phase.generate,))
    @seed(run_seed)
    @given(strategy)
    def draw(params: Any) -> None:
        drawn.append(params)

    try:
        with seed_only_draws():
            draw()
    except Exception as exc:
        return drawn, exc
    return drawn, None
