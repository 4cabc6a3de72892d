"""The family catalogue: every check family, the protocol it exchanges over and what it judges,
and the adversarial family's live mutations with the rule each breaks: names, with no behaviour.

One table decides which protocol a family uses: the runner's plan (`runner.plan`), the pytest
plugin, the report's protocol rows, the filing of findings and rule coverage all read it through
`caiconform.spec.protocols`, and the conformance suites (`suites/test_families.py`) make one item
per family and cell from it. It lives here, below everything that runs or judges an exchange,
because the layers below the check families read it too: `results.expectations` validates an
expectation entry's check against `FAMILIES`, `results.filing` files a live mutation's record
under the rule in `LIVE`, and `spec.rule_coverage` counts both. The families themselves are
`caiconform.checks` (`load`), and the live mutations are built by
`caiconform.checks.adversarial`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CATALOGUE", "FAMILIES", "LIVE", "Entry", "entry"]


@dataclass(frozen=True)
class Entry:
    """One family of the catalogue."""

    #: its name in records, on the command line and in `caiconform.checks`
    name: str
    #: the protocols it exchanges over (`caiconform.spec.protocols`): one, or several for a
    #: family that compares them (agreement)
    protocols: tuple[str, ...]
    #: what it judges, with the rules a failure names: the suite item's description
    judges: str


#: Every family, in the order a run goes through them (cheap, dict-only checks first).
CATALOGUE: tuple[Entry, ...] = (
    Entry(
        "schema",
        ("cai",),
        "every dict each producer exports, across layouts, dtypes and stream scenarios, judged "
        "by the validator and the reference consumer's live checks (MUST findings fail)",
    ),
    Entry(
        "zero_size",
        ("cai",),
        "zero-size arrays and empty views, producer -> consumer: pointer 0 in the export "
        "[CAI-DATA-ZERO-SIZE-NULL] and an empty array of the same shape read back",
    ),
    Entry(
        "roundtrip",
        ("cai",),
        "values producer -> consumer over drawn layouts and dtypes: bitwise equal, NaN-aware "
        "[CAI-CONSUMER-READS-DESCRIBED / CAI-PRODUCER-DESCRIBES-DATA]",
    ),
    Entry(
        "versions",
        ("cai",),
        "CAI versions 0-3, unknown versions and unknown keys fed to each consumer: defined "
        "versions read correctly, unknown ones refused [CAI-VERSION-KNOWN]",
    ),
    Entry(
        "readonly",
        ("cai",),
        "a read-only export fed to each consumer: refused or honoured, never written "
        "[CAI-DATA-READONLY-HONOURED]",
    ),
    Entry(
        "aliasing",
        ("cai",),
        "each consumer entry point copies, or not, as its library documents "
        "[CAI-ENTRY-ZERO-COPY-SEES-WRITES, CAI-ENTRY-COPY-INDEPENDENT]",
    ),
    Entry(
        "mask",
        ("cai",),
        "masked exports fed to each consumer: the mask honoured or the export refused, never "
        "dropped silently [CAI-MASK-TRUTH]",
    ),
    Entry(
        "adversarial",
        ("cai",),
        "malformed and unusual exports over real allocations fed to each consumer: invalid ones "
        "refused cleanly, legal ones read correctly",
    ),
    Entry(
        "streams",
        ("cai",),
        "pending work on the exported stream: consumers synchronize [CAI-SYNC-CONSUMER], "
        "producers export a sufficient stream [CAI-SYNC-PRODUCER-SUFFICIENT]",
    ),
    Entry(
        "lifetime",
        ("cai",),
        "the producer dropped while the consumer holds its data: memory kept while viewed "
        "[CAI-LIFETIME-DATA-HELD], freed after [CAI-LIFETIME-RELEASED]",
    ),
    Entry(
        "devices",
        ("cai",),
        "an array on device 1 consumed while device 0 is current (two GPUs): read correctly or "
        "refused [CAI-DATA-POINTER-CONTEXT]",
    ),
    Entry(
        "agreement",
        ("cai", "dlpack"),
        "objects exporting both the CAI and DLPack describe the same pointer, shape, strides, "
        "dtype and read-only flag [CAI-DLPACK-AGREE]",
    ),
    Entry(
        "dlpack_lifetime",
        ("dlpack",),
        "who releases a DLPack tensor and when: the deleter called once, after the consumer "
        "is done [DLPACK-DELETER-ONCE]",
    ),
    Entry(
        "dlpack_adversarial",
        ("dlpack",),
        "bad capsules fed to each consumer's DLPack import: refused cleanly, never read",
    ),
    Entry(
        "dlpack_roundtrip",
        ("dlpack",),
        "values producer -> consumer over DLPack, every capsule judged by the validator "
        "[DLPACK-CONSUMER-READS-DESCRIBED / DLPACK-PRODUCER-DESCRIBES-DATA]",
    ),
    Entry(
        "dlpack_versions",
        ("dlpack",),
        "each `max_version` answered with a capsule the consumer can take, well formed",
    ),
    Entry(
        "dlpack_copy",
        ("dlpack",),
        "`copy`, `dl_device` and the capsule flags honoured by the producer",
    ),
    Entry(
        "dlpack_streams",
        ("dlpack",),
        "the producer's pending work ordered before the stream a DLPack consumer names "
        "[DLPACK-STREAM-PRODUCER-SYNC]",
    ),
    Entry(
        "dlpack_consumer",
        ("dlpack",),
        "a DLPack consumer reads a reference array's final values on the stream it passes and "
        "before it releases the tensor, and its from_dlpack keeps `copy` and `device` "
        "[DLPACK-STREAM-PRODUCER-SYNC, DLPACK-CONSUMER-READS-DESCRIBED, DLPACK-FROM-COPY-TRUE, "
        "DLPACK-FROM-COPY-FALSE]",
    ),
    Entry(
        "dlpack_capi",
        ("dlpack-c",),
        "the `__dlpack_c_exchange_api__` table of the producer's type: its header, entries and "
        "functions; the tensors it exports equal to `__dlpack__`'s, without waiting "
        "[DLPACK-CAPI-SAME-TENSOR, DLPACK-CAPI-NO-SYNC, DLPACK-CAPI-WORK-STREAM]",
    ),
)

#: every family's name, in catalogue order
FAMILIES: tuple[str, ...] = tuple(e.name for e in CATALOGUE)
_BY_NAME = {e.name: e for e in CATALOGUE}


def entry(family: str) -> Entry | None:
    """The catalogue entry of built-in `family`; None for a family module of the user's own."""
    return _BY_NAME.get(family)


#: the adversarial family's live mutation -> the rule it breaks (None: legal, a consumer must
#: read it or refuse it for a portability reason)
LIVE: dict[str, str | None] = {
    "host-pointer": "CAI-DATA-DEVICE-ACCESSIBLE",
    "extent-past-allocation": "CAI-DATA-EXTENT-IN-ALLOCATION",
    "stream-bogus": "CAI-STREAM-LIVE",
    "object-fields": None,
    "odd-strides": None,
    "negative-strides": None,
    "broadcast": None,
}
