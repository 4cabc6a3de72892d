"""The isolated runner: hypothesis draws examples in the parent, persistent worker processes run
them, and every result is journaled at once.

- `driver`: the session (`run_matrix`: the run directory, the worker slots, the cells planned,
  ordered and driven by one thread per slot);
- `cell`: one cell's life (its floor and drawn examples run and journaled in order, the crash
  caps, each non-pass class shrunk and run again), coordinating its phases: `jobs` (a cell's
  examples as jobs, the crash caps), `dispatch` (drawing them and handing them out in
  batches), `saturation` (when draws stop meeting new classes), `followup` (the shrinks and
  re-runs queued, and what they gave), `shrink` (one class's shrink) and `celljournal` (the
  cell's records and its cells.jsonl line);
- `config`: a run's settings (`RunConfig`), result (`RunResult`) and progress callbacks;
- `records`: the records a run journals for an example and for a cell that could not run;
- `plan`: which cells a run has and which it skips here, and why;
- `schedule`: cost estimates, longest-first order, shards, and the queue of tasks the cell
  threads share;
- `startup`: a run's start side by side (environment, library probes, spin calibration, floors,
  builds);
- `startcache`: what a start measured (probes, self-checks, calibration, floors), kept per
  environment for the next run;
- `calibrate`: the streams spin measured once per run;
- `prefetch`: cells' examples drawn in spawned processes ahead of the cells;
- `pool`: the parent's side of the workers (replacement, spares, GPU pinning, how many slots);
- `transport`: a worker's requests and answers, and how a crash or a hang is told from them;
- `forkserver`: a worker host that forks its workers (imports paid once, a crash costs a fork);
- `zygote`: one process that imports a run's libraries once and forks the slots' fork servers;
- `process`: the entry point of the worker processes and what every process the runner
  starts does first;
- `worker`: the worker process (runs an example, classifies how it ended, checks its health);
- `health`: the after-example health check (CUDA context, pluggable hooks);
- `ioctls`: the NVIDIA driver ioctls a worker's example made, when the ioctl clock is preloaded;
- `journal`, `repro`: `results.jsonl`/`cells.jsonl` and the reproducer scripts;
- `libraries`: the default adapter source (the adapter registry);
- `protocol`, `resolve`: the wire format, and functions named by "module:function".

What an exchange ended in (`Result`, the outcome classes) is `caiconform.results.outcome`; the
hypothesis draws that depend on the seed alone, so resume and shrink can replay them, are
`caiconform.draws` (below the check families, which draw with them too).

Nothing is imported here, so a process that imports one runner module (a worker its `worker`)
pays for no other.
"""
