"""The adapter self-check: does caiconform's adapter do what the library's own API does?

An adapter stands between a library and every finding charged to it. When the adapter builds
its library's array in another shape or layout than the library's users would, or reads a
consumed array back into another shape or type, the findings that follow are caiconform's, not
the library's. So each adapter is held against its library's own public API, on the same
values, for every layout kind (0-d and zero-size included), dtype class and memory kind it is
asked for:

- producer: the adapter's object (`produce`) against the library's own array of the same values
  (`Adapter.own_array`, e.g. `cupy.asarray(values)`): the exported dict's shape, typestr,
  descr, version, read-only flag and keys must be the library's own; its strides those of
  the library's own array for a C layout at offset 0, else the layout's; and the library's own
  host copy of the adapter's object (`Adapter.own_values`) must hold the values asked for;
- consumer: what the adapter's `consume` returns for the library's own array against the
  library's own host copy of it (shape, dtype and every byte); an adapter whose library has no
  array of its own consumes the reference producer's export, held against the values written.

Where the adapter did what the library's own API does and the library's CAI still disagrees
with the library's own view (a producer whose own read of the adapter's array holds the values
asked for while its export states other strides; a consumer whose `consume` is the library's
own calls alone, `Adapter.consume_is_library_call`), the difference is the library's (`LIBRARY`):
the matrix judges it, the harness is not blamed. A check that differs otherwise is a harness
defect (`DIFFERS`); one the library cannot take part in
(`SkipExchange`, or the library refusing) says so and proves nothing. A run does the quick set
of cases at its start, in each available library's probe worker after its probe
(`runner.libraries.selfcheck`), keeps what it found in the run directory (`SELFCHECK_FILE`),
says in its notes what differed (`save_and_tell`), and files every non-passing record of an
adapter in a slice (role, layout kind, dtype class, memory kind) that differed with culprit
`caiconform` (`harness_culprit`): a harness defect, never charged to the library. The GPU tests
run the full set.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.results.filing import HARNESS
from caiconform.rundir import SELFCHECK_JSON
from caiconform.spec.layout import Layout, c_strides, f_strides

__all__ = [
    "HARNESS",
    "SELFCHECK_ID",
    "SELFCHECK_FILE",
    "MODE_ENV",
    "OK",
    "DIFFERS",
    "SKIPPED",
    "REFUSED",
    "NO_OWN_ARRAY",
    "TYPESTRS",
    "Case",
    "Check",
    "cases",
    "compare_exports",
    "check_producer",
    "check_consumer",
    "run",
    "save",
    "save_and_tell",
    "load",
    "failures",
    "harness_culprit",
]

#: the culprit of a record whose cause is caiconform's own code
#: how a self-check failure names what it checks (not a rule of the spec: a duty of the harness)
SELFCHECK_ID = "caiconform adapter self-check"
#: the run directory's file holding every adapter's self-check
SELFCHECK_FILE = SELFCHECK_JSON

OK = "ok"
DIFFERS = "differs"
#: the adapter did what the library's own API does, and the library's CAI disagrees with the
#: library's own view of the same array: the library's finding (the matrix shows it), not ours
LIBRARY = "library"
SKIPPED = "skip"
REFUSED = "refused"
#: how the reason of a producer check begins when the library has no array of its own
NO_OWN_ARRAY = "no own array"

#: one typestr per dtype class a library may hold (`spec.dtypes.dtype_class`)
TYPESTRS = (
    "|b1",
    "<i4",
    "|u1",
    "<f2",
    "<f4",
    "<f8",
    "<c8",
    "bfloat16",
    "structured",
)
#: the typestr every layout kind is checked with in the quick set
_QUICK_TYPESTR = "<f4"
#: the (layout label, typestr) each memory kind but device is checked with in the quick set
_QUICK_KINDS = (("C", _QUICK_TYPESTR), ("C", "|u1"))
#: why the quick set leaves a consumer out
_COMPILES = (
    "its consume compiles a kernel per element type and rank: checked in the full self-check "
    "(tests/gpu/test_selfcheck_gpu.py), not at a run's start"
)
#: why the values of a non-portable layout are not read back
_MISALIGNED = (
    "values not read: its elements are misaligned (strides no multiple of the item size), "
    "which the library's own copy may fault on, poisoning the probe's context"
)
#: the environment variable choosing a run's self-check: "quick" (unset), "full" or "off"
MODE_ENV = "CAICONFORM_SELFCHECK"
#: the layout kinds a library's own array can have, which the consumer side reads
_OWN_LAYOUTS = ("C", "0d", "zero-size")


def _layouts(itemsize: int) -> list[tuple[str, Layout]]:
    """(coverage label as `results.record.coverage_of_params` gives it, a small layout of that
    kind): C in one and two dimensions (a library of flat arrays makes only the first)."""
    s = itemsize
    out = [
        ("C", Layout((2, 3))),
        ("C", Layout((6,))),
        ("C-strides", Layout((2, 3), strides=c_strides((2, 3), s))),
        ("0d", Layout(())),
        ("zero-size", Layout((0, 3))),
        ("zero-size", Layout((0,))),
        ("F", Layout((2, 3), strides=f_strides((2, 3), s), kind="F")),
        ("sliced", Layout((2, 3), strides=(8 * s, 2 * s), offset=s, pad=s, kind="sliced")),
        ("negative", Layout((3, 2), strides=(-2 * s, s), offset=4 * s, kind="negative")),
        ("broadcast", Layout((2, 3), strides=(0, s), kind="broadcast")),
        ("padded", Layout((2, 3), strides=(4 * s, s), kind="padded")),
    ]
    if s > 1:  # strides no multiple of the item size
        out.append(("odd", Layout((2, 3), strides=(4 * s + 5, s + 1), kind="odd", portable=False)))
    return out


@dataclass(frozen=True)
class Case:
    """One request: `layout` (labelled `label`) of `typestr`, in memory of kind `memory`."""

    label: str
    layout: Layout
    typestr: str
    memory: str = "device"

    @property
    def dtype(self) -> str:
        from caiconform.spec.dtypes import dtype_class

        return dtype_class(self.typestr)


def cases(adapter: Adapter, role: str, full: bool = False) -> list[Case]:
    """The cases `adapter` is checked on in `role`. `full`: every layout kind x every dtype
    class x every memory kind it claims; else (a run's start) every layout kind in float32,
    every dtype class in C and 0-d layouts, and every other memory kind in C layouts of
    float32 and uint8. The consumer side reads the library's own arrays: C, 0-d and zero-size
    layouts only, in float32 unless `full`."""
    from caiconform.spec.dtypes import numpy_dtype

    if role not in ("producer", "consumer"):
        raise ValueError(f"role {role!r}: expected 'producer' or 'consumer'")
    kinds = tuple(adapter.memory_kinds) if role == "producer" else ("device",)
    out: list[Case] = []
    for typestr in TYPESTRS:
        layouts = _layouts(numpy_dtype(typestr).itemsize)
        for label, layout in layouts:
            if role == "consumer" and label not in _OWN_LAYOUTS:
                continue
            quick_layout = role == "producer" and label in ("C", "0d")
            if not full and typestr != _QUICK_TYPESTR and not quick_layout:
                continue
            for memory in kinds:
                if not full and memory != "device" and (label, typestr) not in _QUICK_KINDS:
                    continue
                out.append(Case(label, layout, typestr, memory))
    return out


@dataclass
class Check:
    """What one case gave: `status` OK, DIFFERS (`field`: what differs, `seen` the adapter's,
    `expected` the library's own), SKIPPED or REFUSED (`reason` says why)."""

    adapter: str
    role: str
    layout: str
    dtype: str
    memory: str
    typestr: str
    status: str
    field: str = ""
    seen: str = ""
    expected: str = ""
    reason: str = ""

    @property
    def message(self) -> str:
        where = (
            f"caiconform's {self.adapter} adapter ({self.role}, layout {self.layout}, "
            f"{self.typestr}, {self.memory} memory)"
        )
        if self.status == DIFFERS:
            return (
                f"{where}: got {self.field} {self.seen}, expected {self.expected} [{SELFCHECK_ID}]"
            )
        return f"{where}: {self.status}: {self.reason}"

    def slice(self) -> tuple[str, str, str, str, str]:
        return (self.adapter, self.role, self.layout, self.dtype, self.memory)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Check:
        return cls(**{k: data.get(k, "") for k in cls.__dataclass_fields__})


def _check(adapter: Adapter, role: str, case: Case, status: str, **more: str) -> Check:
    return Check(
        adapter.name, role, case.label, case.dtype, case.memory, case.typestr, status, **more
    )


def _values(case: Case) -> np.ndarray:
    from caiconform.spec.values import make_values

    return make_values(case.typestr, case.layout.shape, 0, case.layout.strides)


def _c_order(values: np.ndarray) -> np.ndarray:
    """A C-ordered copy of `values` in their shape: what a library's users upload (written
    here, not taken from the adapters' helpers, so the check shares no code with the checked)."""
    return np.array(values, order="C", copy=True)


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def _byte_strides(d: Mapping[str, Any], itemsize: int) -> tuple[int, ...]:
    shape = tuple(d["shape"])
    strides = d.get("strides")
    return c_strides(shape, itemsize) if strides is None else tuple(strides)


def _descr(d: Mapping[str, Any]) -> Any:
    descr = d.get("descr")
    return None if descr is None else [tuple(field) for field in descr]


def compare_exports(
    made: Mapping[str, Any], own: Mapping[str, Any], layout: Layout, itemsize: int
) -> tuple[str, str, str] | None:
    """(field, the adapter's, the library's own) for the first field in which the adapter's
    export `made` differs from the library's own export `own` of the same values; strides
    against `own`'s for a C layout at offset 0, else against `layout`'s (a library's own
    upload is C-contiguous), over the axes longer than 1 of a non-empty array. None when they
    agree. The data pointer and the stream are the objects' own and not compared."""
    from caiconform.adapters._staging import is_plain_c

    if tuple(made["shape"]) != tuple(own["shape"]):
        return ("shape", str(tuple(made["shape"])), str(tuple(own["shape"])))
    for key in ("typestr", "version"):
        if made.get(key) != own.get(key):
            return (key, repr(made.get(key)), repr(own.get(key)))
    if _descr(made) != _descr(own):
        return ("descr", repr(_descr(made)), repr(_descr(own)))
    if bool(made["data"][1]) != bool(own["data"][1]):
        return ("read-only flag", repr(bool(made["data"][1])), repr(bool(own["data"][1])))
    if set(made) - {"mask"} != set(own) - {"mask"}:
        return ("keys", repr(sorted(set(made) - {"mask"})), repr(sorted(set(own) - {"mask"})))
    shape = tuple(made["shape"])
    if 0 in shape:
        return None
    got = _byte_strides(made, itemsize)
    if is_plain_c(layout, itemsize):
        want, source = _byte_strides(own, itemsize), "the library's own"
    else:
        want, source = layout.effective_strides(itemsize), f"the {layout.kind} layout's"
    for axis, extent in enumerate(shape):
        if extent > 1 and got[axis] != want[axis]:
            return ("strides", str(got), f"{want} ({source})")
    return None


def _values_differ(seen: Any, expected: np.ndarray) -> tuple[str, str, str] | None:
    from caiconform.spec.values import compare_values

    wrong = compare_values(np.asarray(seen) if seen is not None else seen, expected)
    if wrong is None:
        return None
    field = wrong.split(" ", 1)[0] if wrong.startswith(("shape", "dtype")) else "values"
    return (field, wrong, "the values asked for")


def check_producer(adapter: Adapter, case: Case) -> Check:
    """`adapter.produce` of `case` against the library's own array of the same values."""
    from caiconform.cuda.memkinds import using_kind
    from caiconform.spec.dtypes import numpy_dtype

    values = _values(case)
    itemsize = numpy_dtype(case.typestr).itemsize
    failed: BaseException | None = None
    try:
        with using_kind(case.memory):
            obj = adapter.produce(values, case.layout, case.typestr, "none")
    except SkipExchange as exc:
        return _check(adapter, "producer", case, SKIPPED, reason=str(exc))
    except Exception as exc:  # judged below: a harness defect only if the library can
        failed = exc
    try:
        own = adapter.own_array(_c_order(values)).__cuda_array_interface__
    except SkipExchange as exc:
        return _check(adapter, "producer", case, SKIPPED, reason=f"{NO_OWN_ARRAY}: {exc}")
    except Exception as exc:  # the library's own API refusing these values proves nothing
        return _check(adapter, "producer", case, REFUSED, reason=f"own array: {_why(exc)}")
    if failed is not None:
        return _check(
            adapter,
            "producer",
            case,
            DIFFERS,
            field="produce",
            seen=_why(failed),
            expected="an array, as the library's own API made one of these values",
        )
    differs = compare_exports(obj.__cuda_array_interface__, own, case.layout, itemsize)
    if differs is None and not case.layout.portable:
        return _check(adapter, "producer", case, OK, reason=_MISALIGNED)
    if differs is None or (differs[0] == "strides" and case.layout.portable):
        try:
            wrong = _values_differ(adapter.own_values(obj), values)
        except SkipExchange as exc:
            if differs is None:
                return _check(adapter, "producer", case, OK, reason=f"values not read: {exc}")
            wrong = None  # nothing shows the adapter built other memory than asked
        if differs is not None and wrong is None:
            # the library's own read of the adapter's array holds the layout's values: the
            # adapter built what was asked, and the export's strides are the library's own
            return _check(
                adapter,
                "producer",
                case,
                LIBRARY,
                reason=f"its export's strides {differs[1]} differ from {differs[2]}, while the "
                "library's own read of the array holds the values asked for: the library's "
                "export, for the matrix to judge",
            )
        differs = differs or wrong
    if differs is None:
        return _check(adapter, "producer", case, OK)
    field, seen, expected = differs
    return _check(adapter, "producer", case, DIFFERS, field=field, seen=seen, expected=expected)


def _reference_export(case: Case, values: np.ndarray) -> Any:
    from caiconform.adapters import registry

    reference = registry.get("reference")
    ok, why = reference.available()
    if not ok:
        raise SkipExchange(f"the reference producer is unavailable: {why}")
    return reference.produce(values, case.layout, case.typestr, "none")


def check_consumer(adapter: Adapter, case: Case, reference: bool = True) -> Check:
    """`adapter.consume` of the library's own array of `case`'s values against the library's
    own host copy of it; for a library without arrays of its own, of the reference producer's
    export against the values written (`reference`; else SKIPPED)."""
    from caiconform.adapters._staging import cai_only

    values = _values(case)
    try:
        try:
            source = adapter.own_array(_c_order(values))
            expected = np.asarray(adapter.own_values(source))
        except SkipExchange as exc:
            if not reference:
                raise SkipExchange(f"{NO_OWN_ARRAY}: {exc}") from None
            source, expected = _reference_export(case, values), values
    except SkipExchange as exc:
        return _check(adapter, "consumer", case, SKIPPED, reason=str(exc))
    except Exception as exc:  # the library's own API refusing these values proves nothing
        return _check(adapter, "consumer", case, REFUSED, reason=f"own array: {_why(exc)}")
    try:
        got = adapter.consume(cai_only(source))
    except SkipExchange as exc:
        return _check(adapter, "consumer", case, SKIPPED, reason=str(exc))
    except Exception as exc:  # the library refusing its own array: its matter, not ours
        return _check(adapter, "consumer", case, REFUSED, reason=_why(exc))
    differs = _values_differ(got, expected)
    if differs is None:
        return _check(adapter, "consumer", case, OK)
    if adapter.consume_is_library_call:  # nothing of ours between the import and the values
        return _check(
            adapter,
            "consumer",
            case,
            LIBRARY,
            reason=f"through the CAI the library read {differs[1]}, through its own object "
            "what its own read gives: the library's CAI import, for the matrix to judge",
        )
    field, seen, _ = differs
    return _check(
        adapter,
        "consumer",
        case,
        DIFFERS,
        field=field,
        seen=seen,
        expected="what the library's own read of the same array gives",
    )


def run(adapter: Adapter, full: bool = False) -> dict[str, Any]:
    """Every case of `adapter` in each role it plays (`cases`): {"adapter", "seconds",
    "checks": [Check.to_dict()]}. Each case is checked on its own: one that raises what the
    checks do not expect is recorded as differing, and the others still run. The quick set
    (not `full`, a run's start, in the library's probe) leaves out the consumer side of an
    adapter whose consume compiles a kernel per element type and rank ("kernel" capability)
    and of one whose library has no array of its own (its reference export would compile
    cuda.cccl's builds)."""
    started = time.perf_counter()
    checks: list[Check] = []

    def consumer(adapter: Adapter, case: Case) -> Check:
        return check_consumer(adapter, case, reference=full)

    roles = (("producer", "produce", check_producer), ("consumer", "consume", consumer))
    for role, capability, check in roles:
        if capability not in adapter.capabilities:
            continue
        if role == "consumer" and not full and "kernel" in adapter.capabilities:
            case = Case("C", Layout((2, 3)), _QUICK_TYPESTR)
            checks.append(_check(adapter, role, case, SKIPPED, reason=_COMPILES))
            continue
        for case in cases(adapter, role, full):
            try:
                checks.append(check(adapter, case))
                if checks[-1].reason.startswith(NO_OWN_ARRAY):
                    break  # nothing to hold this role against, whatever the case
            except Exception as exc:  # a check of ours failing is a harness defect too
                checks.append(
                    _check(
                        adapter,
                        role,
                        case,
                        DIFFERS,
                        field="self-check",
                        seen=_why(exc),
                        expected="the check to finish",
                    )
                )
    return {
        "adapter": adapter.name,
        "seconds": round(time.perf_counter() - started, 4),
        "checks": [c.to_dict() for c in checks],
    }


def save(run_dir: Path, results: Mapping[str, Mapping[str, Any]]) -> Path:
    """Write `results` (adapter -> `run`'s answer) to the run directory's SELFCHECK_FILE."""
    path = Path(run_dir) / SELFCHECK_FILE
    path.write_text(json.dumps(dict(results), indent=1, sort_keys=True) + "\n")
    return path


def save_and_tell(run_dir: Path, infos: Mapping[str, Any]) -> list[str]:
    """Save the self-checks the probes answered (`infos`: name -> `LibraryInfo`) to the run
    directory (none: nothing written, a stale file removed) and say, one line each, which
    differed, which could not run, and how long they took."""
    results = {n: i.selfcheck for n, i in infos.items() if getattr(i, "selfcheck", None)}
    path = Path(run_dir) / SELFCHECK_FILE
    if not results:
        path.unlink(missing_ok=True)
        return []
    save(run_dir, results)
    lines = []
    differing = [Check.from_dict(c) for r in results.values() for c in r.get("checks", ())]
    differing = failures(differing)
    seconds = sum(float(r.get("seconds") or 0) for r in results.values())
    if differing:
        lines.append(
            f"adapter self-check: {len(differing)} case(s) where caiconform's adapter differs "
            f"from its library's own API; their records are filed under {HARNESS} "
            f"({SELFCHECK_FILE}); first: {differing[0].message}"
        )
    for name, result in results.items():
        if result.get("error"):
            lines.append(f"adapter self-check of {name} could not run: {result['error']}")
    lines.append(f"adapter self-check: {len(results)} adapter(s), {seconds:.2f} s in their probes")
    return lines


def load(run_dir: Path) -> list[Check]:
    """Every check recorded in the run directory's SELFCHECK_FILE ([] when there is none)."""
    path = Path(run_dir) / SELFCHECK_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [Check.from_dict(c) for entry in data.values() for c in entry.get("checks", ())]


def failures(checks: Iterable[Check]) -> list[Check]:
    return [c for c in checks if c.status == DIFFERS]


@functools.lru_cache(maxsize=8)
def _failed_slices(run_dir: str, mtime: float) -> dict[tuple[str, ...], Check]:
    """The first differing check of each slice in `run_dir`'s SELFCHECK_FILE, read once per
    version of the file (`mtime`)."""
    out: dict[tuple[str, ...], Check] = {}
    for check in failures(load(Path(run_dir))):
        out.setdefault(check.slice(), check)
    return out


def _labels(record: Mapping[str, Any]) -> Mapping[str, str]:
    """The record's coverage labels as its params give them (`coverage_of_params`: a floor
    record's own labels name zero-size shapes more finely), over its `coverage`."""
    from caiconform.results.record import coverage_of_params

    coverage = record.get("coverage")
    params = record.get("params")
    return {
        **(coverage if isinstance(coverage, Mapping) else {}),
        **(coverage_of_params(params) if isinstance(params, dict) else {}),
    }


def harness_culprit(
    record: Mapping[str, Any], run_dir: Path | None = None, checks: Sequence[Check] | None = None
) -> dict[str, Any] | None:
    """The culprit `caiconform` for a non-passing `record` whose producer or consumer adapter
    differed from its library in the record's slice (role, layout kind, dtype class, memory
    kind), from `checks` or else the run directory's SELFCHECK_FILE; None otherwise."""
    if record.get("outcome") in ("pass", "skip"):
        return None
    if checks is not None:
        failed = {c.slice(): c for c in reversed(failures(checks))}
    else:
        path = Path(run_dir or ".") / SELFCHECK_FILE
        try:
            failed = _failed_slices(str(path.parent), path.stat().st_mtime)
        except OSError:
            return None
    if not failed:
        return None
    labels = _labels(record)
    for role in ("producer", "consumer"):
        name = record.get(role)
        key = (
            name,
            role,
            labels.get("layout", "C"),
            labels.get("dtype", ""),
            labels.get("memory", "device"),
        )
        check = failed.get(key)
        if check is not None:
            return {
                "library": HARNESS,
                "role": role,
                "why": f"a harness defect, not {name}'s: {check.message}",
            }
    return None
