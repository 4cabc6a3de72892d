"""versions: exports of every CAI version, unknown versions and unknown keys, fed to consumers.

The reference producer exports versions 0-3 with exactly the keys each defines (explicit
strides for v0/v1, no mask in v0, no stream before v3). Some examples then replace the version
by one the spec does not define (4, 99, -1, 2**31) or add a key it does not define. A consumer
must read every defined version correctly; it should refuse an unknown version (the dict breaks
CAI-VERSION-KNOWN, so it cannot know what the entries mean) and may ignore unknown keys
(CAI-KEYS-UNKNOWN is a SHOULD on the producer: such a dict is still valid).

Outcomes: valid dicts: `pass`, `fail` (CAI-CONSUMER-READS-DESCRIBED) or `rejected` naming
CAI-KEYS-UNKNOWN (refused for an extra key), else the reason the refusal names or the
portability rule that explains it (a float8 export refused for its type), else
CAI-CONSUMER-READS-DESCRIBED (a defined version refused); unknown versions: `rejected` with expected EXPECT_REJECTION (right) or `accepted-invalid`.
"""

from __future__ import annotations

from hypothesis import strategies as st

from caiconform.checks import _encoding, _exchange, _sources, _values
from caiconform.results.outcome import Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "UNKNOWN_VERSIONS",
    "EXTRA_KEYS",
    "examples",
    "build",
    "execute",
    "repro",
]

FAMILY = "versions"
ROLES = "consumer"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True
UNKNOWN_VERSIONS = (4, 99, -1, 2**31)
EXTRA_KEYS = ("owner", "device", "flags", "__version__")


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """version (3 first), an unknown version or None, an extra key or None, typestr, a
    nonzero shape and a seed; shrinks toward a plain v3 export."""
    from caiconform import strategies as cst

    return st.fixed_dictionaries(
        {
            "version": st.sampled_from([3, 2, 1, 0]),
            "unknown_version": st.none() | st.sampled_from(UNKNOWN_VERSIONS),
            "extra_key": st.none() | st.sampled_from(EXTRA_KEYS),
            "typestr": cst.typestrs(),
            "shape": cst.shapes(min_dims=1, allow_zero=False).map(list),
            "seed": _values.seeds(),
        }
    )


def floor(producer: str | None, consumer: str | None) -> list:
    """Every version 0-3 plain, every unknown version and every extra key on a v3 export
    (float32), then each dtype class at version 3."""
    from caiconform.checks import _floor

    base = {"typestr": "<f4", "shape": [4, 3], "seed": 0}
    cov = _floor.coverage_of("<f4", "C")
    out = [
        _floor.FloorExample(
            {**cov, "version": str(v)},
            {"version": v, "unknown_version": None, "extra_key": None, **base},
        )
        for v in (3, 2, 1, 0)
    ]
    out += [
        _floor.FloorExample(
            {**cov, "version": repr(u)},
            {"version": 3, "unknown_version": u, "extra_key": None, **base},
        )
        for u in UNKNOWN_VERSIONS
    ]
    out += [
        _floor.FloorExample(
            {**cov, "version": f"3+{k}"},
            {"version": 3, "unknown_version": None, "extra_key": k, **base},
        )
        for k in EXTRA_KEYS
    ]
    for ex in _floor.plain_floor():
        if ex.params["typestr"] != "<f4":
            params = {"version": 3, "unknown_version": None, "extra_key": None, **ex.params}
            out.append(_floor.FloorExample(ex.coverage, params))
    return out


def build(params: dict, keepalive: object) -> dict:
    """The dict fed to the consumer: the reference export of `params["version"]`, edited."""
    d = dict(keepalive.__cuda_array_interface__)
    if params["unknown_version"] is not None:
        d["version"] = params["unknown_version"]
    if params["extra_key"] is not None:
        d[params["extra_key"]] = "caiconform"
    return d


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform import validate
    from caiconform.reference.producer import ReferenceArray

    typestr, shape = params["typestr"], tuple(params["shape"])
    values = make_values(typestr, shape, params["seed"])
    ref = ReferenceArray(values, Layout(shape), typestr, version=params["version"])
    d = build(params, ref)
    report = validate(d)
    violated = report.errors[0].rule if report.errors else None
    label = params["unknown_version"] if params["unknown_version"] is not None else d["version"]
    extra = f" + key {params['extra_key']!r}" if params["extra_key"] else ""
    context = f"reference->{consumer} version {label}{extra} {typestr} {shape}"
    # a refusal of a valid dict of a known version is about what it refuses: an extra key
    # [CAI-KEYS-UNKNOWN], else the reason it names or the portability rule that explains it
    # (a float8 export refused for its type is a type refusal), else reading what it describes;
    # never CAI-VERSION-KNOWN, a rule of the producer's that a known version keeps
    reject_rule = "CAI-KEYS-UNKNOWN" if params["extra_key"] else None
    return _exchange.judge_exchange(
        consumer,
        _encoding.InterfaceObject(d, keepalive=ref),
        values,
        violated,
        context,
        reject_rule=reject_rule,
    )


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    shape = tuple(params["shape"])
    edits = []
    if params["unknown_version"] is not None:
        edits.append(f"d['version'] = {params['unknown_version']!r}")
    if params["extra_key"] is not None:
        edits.append(f"d[{params['extra_key']!r}] = 'caiconform'")
    return _sources.repro_script(
        f"versions: a CAI v{params['version']} export"
        + (
            f", version replaced by {params['unknown_version']}"
            if params["unknown_version"]
            else ""
        )
        + (f", extra key {params['extra_key']!r}" if params["extra_key"] else "")
        + f", read by {consumer}.",
        values_source(params["typestr"], shape, params["seed"]),
        "from caiconform.reference.producer import ReferenceArray\n"
        "from caiconform.spec.layout import Layout\n\n"
        f"ref = ReferenceArray(values, Layout({shape!r}), {params['typestr']!r}, "
        f"version={params['version']})\n"
        "d = dict(ref.__cuda_array_interface__)\n" + "\n".join(edits) + "\n\n\n"
        "class Export:\n"
        "    __cuda_array_interface__ = d\n\n\n"
        "obj = Export()\n",
        _sources.consumer_source(consumer),
        _sources.COMPARE_SOURCE,
    )
