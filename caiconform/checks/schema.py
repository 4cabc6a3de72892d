"""schema: is every dict a producer exports valid, across layouts, dtypes and stream scenarios?

Each example asks the producer for an array (a typestr, a layout and a stream scenario drawn by
hypothesis), reads its `__cuda_array_interface__` and judges it: the validator for everything a
dict alone shows, a reachability test for CAI-LIFETIME-NO-EFFECT (the dict must hold no
reference to the exporting object), then the reference consumer's live checks (pointer
device-accessible, extent inside one allocation, stream live) for what only the driver shows.

How findings become outcomes:
- any MUST finding: `fail`, `rule` the first one; the message counts the others;
- SHOULD and PORTABILITY findings alone: `pass`, the message listing them ("warnings: RULE at
  path; ...") and `seen` holding their rule IDs, so a report can count them without turning
  legal-but-unportable exports into failures; MAY findings are information and dropped.

Objects that cannot export (`Adapter.unexportable_kinds`: a CPU or sparse tensor, a tensor that
requires grad, an array on the host platform) are floor examples of their library's cell: reading
the attribute must raise AttributeError, so `hasattr()` is False and `getattr(obj, name, None)`
is None; any other exception fails CAI-ATTR-RAISES-ATTRIBUTEERROR, and a dict returned instead is
judged like any export (a host pointer fails CAI-DATA-DEVICE-ACCESSIBLE).

A library's settings that choose the version it exports (`Adapter.export_settings`, e.g. CuPy's
CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION=2) are floor examples too: the dict read with the
setting in force is judged like any export and must be of the version the setting names, with
no `stream` before version 3. Such a setting is the producer's option to export no stream
(CAI-SYNC-PRODUCER-OPT-OUT): one that leaves the version or the stream as they were is `fail`.

The pseudo-producer `synthetic` (`SYNTHETIC`) needs no GPU: its examples are dicts drawn from
`caiconform.strategies.interface_dicts` (valid) and `mutants` (each breaking one named rule), and
an example passes when the validator's verdict is the one the strategy promises. The adapter
source `caiconform.checks.synthetic_source` offers it to the runner.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from hypothesis import strategies as st

from caiconform.checks import _encoding, _exchange, _results, _sources, _values
from caiconform.results.outcome import FAIL, Result
from caiconform.spec.layout import Layout
from caiconform.spec.validate import ATTR
from caiconform.spec.values import make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "SYNTHETIC",
    "SCENARIOS",
    "examples",
    "execute",
    "repro",
    "judge",
    "judge_unexportable",
    "owner_reachable",
]

FAMILY = "schema"
ROLES = "producer"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True
SYNTHETIC = "synthetic"
#: `synthetic` hands out dicts, not objects: only this family can judge it (runner.plan)
DICT_PRODUCERS = True
#: every scenario but `unsynced`, which is wrong on purpose
SCENARIOS = (
    "none",
    "legacy",
    "per-thread",
    "pending",
    "multi-stream",
    "nonblocking",
    "external",
    "library-default",
)


@functools.cache  # _producer_params: one strategy per value (flatmap validates each new one)
def _producer_params(typestr: str) -> st.SearchStrategy[dict]:
    from caiconform import strategies as cst
    from caiconform.spec.typestr import parse_typestr

    itemsize = parse_typestr(typestr).itemsize
    return st.fixed_dictionaries(
        {
            "typestr": st.just(typestr),
            "layout": cst.layouts(itemsize=itemsize).map(Layout.to_dict),
            "stream_scenario": cst.stream_scenarios(scenarios=SCENARIOS),
            "seed": _values.seeds(),
            # floor-only: an object that cannot export, an export-version setting
            "unexportable": st.none(),
            "export_setting": st.none(),
        }
    )


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """Params of one example. For a real producer: typestr, layout (as a dict), stream
    scenario and seed; shrinks toward '|b1'-first numeric kinds, C layouts and scenario none.
    For `synthetic`: an encoded interface dict and the rule it breaks (None when valid)."""
    from caiconform import strategies as cst

    if producer == SYNTHETIC:
        valid = cst.interface_dicts(version=None, valid=True).map(
            lambda d: {"interface": _encoding.encode(d), "rule": None}
        )
        broken = cst.mutants().map(
            lambda m: {"interface": _encoding.encode(m.interface), "rule": m.rule}
        )
        return st.one_of(valid, broken)
    return cst.typestrs().flatmap(_producer_params)


def floor(producer: str | None, consumer: str | None) -> list:
    """Every layout kind x dtype class x byte order (scenario none), then every stream scenario
    on a C float32 array (`checks._floor`); none for `synthetic`, whose dicts are drawn."""
    from caiconform.checks import _floor

    if producer == SYNTHETIC:
        return []
    none = {"unexportable": None, "export_setting": None}
    out = [
        _floor.FloorExample(ex.coverage, {**ex.params, "stream_scenario": "none", **none})
        for ex in _floor.data_floor()
    ]
    plain = {
        "typestr": "<f4",
        "layout": _floor.floor_layout("C", 4).to_dict(),
        "stream_scenario": "none",
        "seed": 0,
    }
    cov = _floor.coverage_of("<f4", "C")
    out += [
        _floor.FloorExample(
            {**cov, "object": f"cannot export: {kind}"},
            {**plain, **none, "unexportable": kind},
        )
        for kind in _unexportable_kinds(producer)
    ]
    out += [
        _floor.FloorExample(
            {**cov, "version": f"{version} ({setting})"},
            {**plain, **none, "export_setting": setting},
        )
        for setting, version in _adapter_hook(producer, "export_settings")
    ]
    for scenario in SCENARIOS[1:]:
        out.append(
            _floor.FloorExample(
                _floor.coverage_of("<f4", "C", scenario),
                {**plain, **none, "stream_scenario": scenario},
            )
        )
    return out


def _adapter_hook(producer: str | None, name: str) -> tuple:
    """The producer adapter's class attribute `name` (`unexportable_kinds`, `export_settings`);
    empty for a name the registry lacks (an adapter source of its own, such as the tests'
    synthetic libraries)."""
    from caiconform.adapters.registry import BUILTIN, get

    if producer is None or producer not in BUILTIN:
        return ()
    return tuple(getattr(get(producer), name, ()))


def _unexportable_kinds(producer: str | None) -> tuple[str, ...]:
    return _adapter_hook(producer, "unexportable_kinds")


def judge_setting(interface: Any, setting: str, version: int, context: str) -> Result | None:
    """`fail` CAI-SYNC-PRODUCER-OPT-OUT when the dict read under `setting` is not of the
    `version` it names, or carries a stream before version 3; None when it is."""
    got = interface.get("version") if isinstance(interface, dict) else None
    stream = isinstance(interface, dict) and version < 3 and "stream" in interface
    if got == version and not stream:
        return None
    seen = f"version {got!r}" + (f", stream {interface['stream']!r}" if stream else "")
    return _results.failed(
        "CAI-SYNC-PRODUCER-OPT-OUT",
        f"{seen} with {setting}",
        f"a version {version} dict" + (" without stream" if version < 3 else ""),
        context,
    )


def judge_unexportable(obj: Any, context: str) -> Result | None:
    """The outcome of reading the attribute of an object that cannot export: `pass` when it
    raises AttributeError (and `hasattr` agrees), `fail` CAI-ATTR-RAISES-ATTRIBUTEERROR for any
    other exception; None when it returned something, which is then judged as an export."""
    try:
        getattr(obj, ATTR)
    except AttributeError as exc:
        return _results.passed(f"{context}: {_results.describe_exception(exc)}")
    except Exception as exc:  # noqa: BLE001 - the exception type is what is judged
        return _results.failed(
            "CAI-ATTR-RAISES-ATTRIBUTEERROR",
            f"{_results.describe_exception(exc)} when reading the attribute (hasattr() raises it "
            "too, and getattr(obj, name, None) does not return None)",
            "AttributeError, as for any object without the interface",
            context,
        )
    return None


def _execute_unexportable(kind: str, producer: str) -> Result:
    from caiconform import validate

    obj = _exchange.adapter(producer).unexportable(kind)
    context = f"{producer} {kind} object, which cannot export"
    ended = judge_unexportable(obj, context)
    if ended is not None:
        return ended
    report = validate(obj)
    findings = list(report.findings)
    if report.ok:
        from caiconform.reference.live import live_check

        live, _why = live_check(obj)
        findings.extend(live)
    return judge(findings, f"{context} (it exported a dict)")


def owner_reachable(interface: Any, owner: Any, depth: int = 4) -> bool:
    """True when `owner` is reachable from `interface` through dicts, tuples and lists: the
    dict then keeps the exporting object alive [CAI-LIFETIME-NO-EFFECT]."""
    if interface is owner:
        return True
    if depth == 0:
        return False
    if isinstance(interface, dict):
        items = [*interface.keys(), *interface.values()]
    elif isinstance(interface, (tuple, list)):
        items = list(interface)
    else:
        return False
    return any(owner_reachable(item, owner, depth - 1) for item in items)


def judge(findings: list, context: str) -> Result:
    """The outcome of a list of `Finding`s (see the module docstring)."""
    from caiconform.spec.rules import Level

    errors = [f for f in findings if f.level is Level.MUST]
    warnings = [f for f in findings if f.level in (Level.SHOULD, Level.PORTABILITY)]
    if errors:
        first = errors[0]
        more = f" (+{len(errors) - 1} more: {', '.join(f.rule for f in errors[1:4])})"
        return Result(
            FAIL,
            first.rule,
            f"{context}: {first.message}" + (more if len(errors) > 1 else ""),
            first.seen,
            first.expected,
        )
    if warnings:
        listed = "; ".join(f"{f.rule} at {f.path or 'the object'}" for f in warnings)
        return _results.passed(f"{context}: warnings: {listed}", seen=[f.rule for f in warnings])
    return _results.passed(f"{context}: no finding")


def _judge_synthetic(params: dict) -> Result:
    from caiconform import validate
    from caiconform.spec.rules import Level

    interface = _encoding.decode(params["interface"])
    report = validate(interface)
    binding = {f.rule for f in report.findings if f.level in (Level.MUST, Level.SHOULD)}
    rule = params["rule"]
    if rule is None:
        if binding:
            first = sorted(binding)[0]
            return _results.failed(
                first, sorted(binding), "no MUST or SHOULD finding", "valid dict"
            )
        return _results.passed("valid dict: no MUST or SHOULD finding")
    if binding != {rule}:
        return _results.failed(rule, sorted(binding), f"exactly [{rule}]", "mutant")
    return _results.passed(f"mutant: the validator names {rule} and nothing else")


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    if producer == SYNTHETIC:
        return _judge_synthetic(params)
    if params.get("unexportable") is not None:
        return _execute_unexportable(params["unexportable"], producer)
    from caiconform import validate
    from caiconform.spec.findings import finding

    layout = Layout.from_dict(params["layout"])
    typestr, scenario = params["typestr"], params["stream_scenario"]
    values = make_values(typestr, layout.shape, params["seed"], layout.strides)
    setting = params.get("export_setting")
    if setting is None:
        obj = _exchange.produce(producer, values, layout, typestr, scenario)
        context = f"{producer} {typestr} {layout.kind} {scenario}"
    else:
        obj = _exchange.adapter(producer).produce_under(setting, values, layout, typestr)
        context = f"{producer} {typestr} {layout.kind} with {setting}"
    ended, extra = _results.named_export(obj, typestr, context)
    if ended is not None:
        return ended
    report = validate(obj)
    findings = list(report.findings) + extra
    try:
        interface = obj.__cuda_array_interface__
    except Exception:  # the validator already reported how reading it failed
        interface = None
    if setting is not None:
        version = dict(_adapter_hook(producer, "export_settings"))[setting]
        wrong = judge_setting(interface, setting, version, context)
        if wrong is not None:
            return wrong
    asked = _shape_asked(interface, layout.shape)
    if asked is not None:
        findings.append(asked)
    if owner_reachable(interface, obj):
        findings.append(
            finding(
                "CAI-LIFETIME-NO-EFFECT",
                "",
                "the dict holds the exporting object",
                "no reference to the owner",
            )
        )
    if report.ok:
        from caiconform.reference.live import live_check

        live, _why = live_check(obj)
        findings.extend(live)
    return judge(findings, context)


def _shape_asked(interface: Any, shape: tuple[int, ...]) -> Any:
    """A CAI-PRODUCER-DESCRIBES-DATA finding when the producer's dict names another shape than
    the array it was asked for (the plugin's factory contract, here for a registered adapter),
    else None: a dict of valid form can still describe other elements than the object holds.
    A shape the validator already finds malformed is left to it."""
    from caiconform.spec.findings import finding

    got = interface.get("shape") if isinstance(interface, dict) else None
    if type(got) is not tuple or any(type(n) is not int for n in got):
        return None
    if got == tuple(shape):
        return None
    return finding(
        "CAI-PRODUCER-DESCRIBES-DATA",
        "shape",
        repr(got),
        f"{tuple(shape)!r}, the shape of the array asked for",
    )


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    judge_lines = """
    import caiconform
    report = caiconform.validate(obj)
    for f in report.findings:
        print(f.level, f.message)
    print("ok (no MUST finding):", report.ok)
    """
    if params.get("unexportable") is not None:
        kind = params["unexportable"]
        return _sources.repro_script(
            f"schema: reading __cuda_array_interface__ of a {producer} {kind} object, which "
            "cannot export, should raise AttributeError [CAI-ATTR-RAISES-ATTRIBUTEERROR].",
            "from caiconform.adapters.registry import get\n\n"
            f"obj = get({producer!r}).unexportable({kind!r})\n",
            "try:\n"
            "    obj.__cuda_array_interface__\n"
            "except AttributeError as exc:\n"
            "    print('AttributeError (right):', exc)\n"
            "print('hasattr:', hasattr(obj, '__cuda_array_interface__'))\n",
        )
    if producer == SYNTHETIC:
        encoded = json.dumps(params["interface"])
        return _sources.repro_script(
            f"schema: the validator's verdict on a synthetic dict (expected rule: "
            f"{params['rule']}).",
            "import json\n\nfrom caiconform.checks._encoding import decode\n\n"
            f"obj = decode(json.loads({encoded!r}))\n"
            "print(obj)\n",
            judge_lines,
        )
    layout = Layout.from_dict(params["layout"])
    setting = params.get("export_setting")
    if setting is not None:
        return _sources.repro_script(
            f"schema: the __cuda_array_interface__ {producer} exports with {setting} "
            f"[CAI-SYNC-PRODUCER-OPT-OUT].",
            values_source(params["typestr"], layout.shape, params["seed"], layout.strides),
            "from caiconform.adapters.registry import get\n"
            "from caiconform.spec.layout import Layout\n\n"
            f"layout = Layout.from_dict({params['layout']!r})\n"
            f"obj = get({producer!r}).produce_under({setting!r}, values, layout, "
            f"{params['typestr']!r})\n",
            "print(obj.__cuda_array_interface__)\n",
            judge_lines,
        )
    return _sources.repro_script(
        f"schema: the __cuda_array_interface__ {producer} exports for a {params['typestr']} "
        f"array, layout {layout.kind}, stream scenario {params['stream_scenario']}.",
        values_source(params["typestr"], layout.shape, params["seed"], layout.strides),
        _sources.producer_source(producer, layout, params["typestr"], params["stream_scenario"]),
        "print(obj.__cuda_array_interface__)\n",
        judge_lines,
    )
