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

from caiconform.checks import _support as sup
from caiconform.runner.outcome import FAIL, Result
from caiconform.spec.layout import Layout

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
            "seed": sup.seeds(),
        }
    )


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """Params of one example. For a real producer: typestr, layout (as a dict), stream
    scenario and seed; shrinks toward '|b1'-first numeric kinds, C layouts and scenario none.
    For `synthetic`: an encoded interface dict and the rule it breaks (None when valid)."""
    from caiconform import strategies as cst

    if producer == SYNTHETIC:
        valid = cst.interface_dicts(version=None, valid=True).map(
            lambda d: {"interface": sup.encode(d), "rule": None}
        )
        broken = cst.mutants().map(lambda m: {"interface": sup.encode(m.interface), "rule": m.rule})
        return st.one_of(valid, broken)
    return cst.typestrs().flatmap(_producer_params)


def floor(producer: str | None, consumer: str | None) -> list:
    """Every layout kind x dtype class x byte order (scenario none), then every stream scenario
    on a C float32 array (`checks._floor`); none for `synthetic`, whose dicts are drawn."""
    from caiconform.checks import _floor

    if producer == SYNTHETIC:
        return []
    out = [
        _floor.FloorExample(ex.coverage, {**ex.params, "stream_scenario": "none"})
        for ex in _floor.data_floor()
    ]
    layout = _floor.floor_layout("C", 4)
    for scenario in SCENARIOS[1:]:
        out.append(
            _floor.FloorExample(
                _floor.coverage_of("<f4", "C", scenario),
                {
                    "typestr": "<f4",
                    "layout": layout.to_dict(),
                    "stream_scenario": scenario,
                    "seed": 0,
                },
            )
        )
    return out


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
        return sup.passed(f"{context}: warnings: {listed}", seen=[f.rule for f in warnings])
    return sup.passed(f"{context}: no finding")


def _judge_synthetic(params: dict) -> Result:
    from caiconform import validate
    from caiconform.spec.rules import Level

    interface = sup.decode(params["interface"])
    report = validate(interface)
    binding = {f.rule for f in report.findings if f.level in (Level.MUST, Level.SHOULD)}
    rule = params["rule"]
    if rule is None:
        if binding:
            first = sorted(binding)[0]
            return sup.failed(first, sorted(binding), "no MUST or SHOULD finding", "valid dict")
        return sup.passed("valid dict: no MUST or SHOULD finding")
    if binding != {rule}:
        return sup.failed(rule, sorted(binding), f"exactly [{rule}]", "mutant")
    return sup.passed(f"mutant: the validator names {rule} and nothing else")


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    if producer == SYNTHETIC:
        return _judge_synthetic(params)
    from caiconform import validate
    from caiconform.spec.findings import finding

    layout = Layout.from_dict(params["layout"])
    typestr, scenario = params["typestr"], params["stream_scenario"]
    values = sup.make_values(typestr, layout.shape, params["seed"], layout.strides)
    obj = sup.produce(producer, values, layout, typestr, scenario)
    context = f"{producer} {typestr} {layout.kind} {scenario}"
    ended, extra = sup.named_export(obj, typestr, context)
    if ended is not None:
        return ended
    report = validate(obj)
    findings = list(report.findings) + extra
    try:
        interface = obj.__cuda_array_interface__
    except Exception:  # the validator already reported how reading it failed
        interface = None
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


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    judge_lines = """
    import caiconform
    report = caiconform.validate(obj)
    for f in report.findings:
        print(f.level, f.message)
    print("ok (no MUST finding):", report.ok)
    """
    if producer == SYNTHETIC:
        encoded = json.dumps(params["interface"])
        return sup.repro_script(
            f"schema: the validator's verdict on a synthetic dict (expected rule: "
            f"{params['rule']}).",
            "import json\n\nfrom caiconform.checks._support import decode\n\n"
            f"obj = decode(json.loads({encoded!r}))\n"
            "print(obj)\n",
            judge_lines,
        )
    layout = Layout.from_dict(params["layout"])
    return sup.repro_script(
        f"schema: the __cuda_array_interface__ {producer} exports for a {params['typestr']} "
        f"array, layout {layout.kind}, stream scenario {params['stream_scenario']}.",
        sup.values_source(params["typestr"], layout.shape, params["seed"], layout.strides),
        sup.producer_source(producer, layout, params["typestr"], params["stream_scenario"]),
        "print(obj.__cuda_array_interface__)\n",
        judge_lines,
    )
