"""The isolated runner: hypothesis draws examples in the parent, persistent worker processes run
them, and every result is journaled at once.

- `outcome`: the outcome classes and `Result`, the check-family contract;
- `worker`: the worker process (runs an example, classifies how it ended, checks its health);
- `health`: the after-example health check (CUDA context, pluggable hooks);
- `pool`: the parent's side of the workers (crash and hang detection, replacement, spares);
- `plan`: which cells a run has and which it skips here, and why;
- `driver`: the matrix (explore, shrink, resume, parallel cells);
- `draws`: hypothesis draws that depend on the seed alone, so resume and shrink can replay them;
- `journal`, `repro`: `results.jsonl`/`cells.jsonl` and the reproducer scripts;
- `libraries`: the default adapter source (the adapter registry);
- `protocol`, `resolve`: the wire format, and functions named by "module:function".

Nothing is imported here, so `import caiconform.results.outcome` stays cheap for the workers
and the check families.
"""
