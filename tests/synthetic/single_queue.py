"""A family module that declares `SINGLE_QUEUE` (its cells' workers make their CUDA contexts
with one hardware queue: `runner.forkserver.queues_for`); its examples are `checks.queues`."""

from tests.synthetic.checks import queues

__all__ = ["SINGLE_QUEUE", "queues"]

SINGLE_QUEUE = True
