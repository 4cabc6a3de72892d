"""streams: the producer's final write left pending on a stream; the consumer reads at once.

The pending work is a host-side sleep on the stream (libc's usleep enqueued with
cuLaunchHostFunc: the stream waits, the GPU stays free) followed by the device-to-device copy of
the final bytes over the sentinel (every byte complemented), so an element read too early is
recognisably wrong. A consumer's race group (it did not wait on the stream the dict names) gets
a producer written with the driver that exports its stream correctly: whatever goes wrong is the
consumer's. A consumer's refusal group keeps the run's producer library (its dict is what was
refused). A producer's group keeps the producer library's own stream and copy: its dict (stream
0), or an export whose stream does not cover the work (read by a conforming consumer: wait on
the exported stream, then copy), or a version 2 export with work pending.
"""

from __future__ import annotations

import numpy as np

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of
from caiconform.report.standalone.pending import pending_producer, reference_pending

__all__ = ["NUMBA_SCENARIOS", "script"]

NUMBA_SCENARIOS = ("numba-sync", "numba-stream-none", "numba-sync-off", "numba-export")


def _read_early(s: Script, group: dict, consumer: str, context: str, expected: str) -> None:
    """Read `obj` at once, wait for everything, then the verdict: BUG when any element is not
    its final value (how many were still the sentinel is said)."""
    rule = group.get("rule") or group.get("input_rule")
    refused = (
        f'verdict(True, f"{consumer} refused a valid export ({context}): '
        f'{{type(exc).__name__}}: {{exc}}; expected the values after the pending work [{rule}]")'
        if group.get("outcome") == "rejected-valid"
        else f'verdict(False, f"{consumer} refused the export: {{type(exc).__name__}}: {{exc}}")'
    )
    s.add(
        f"""
        print("exported:", obj.__cuda_array_interface__)
        try:
            result = read(obj)
        except Exception as exc:
            ck(cu.cuCtxSynchronize())
            {refused}
        ck(cu.cuCtxSynchronize())
        wrong = differ(result, values)
        if wrong:
            early = sum(1 for a, b in zip(np.asarray(result).reshape(-1), sentinel.reshape(-1))
                        if np.asarray(a).tobytes() == np.asarray(b).tobytes())
            verdict(True, f"{consumer} read {context} before the producer's pending write: "
                          f"{{wrong}} ({{early}} still the sentinel); expected {expected} [{rule}]")
        verdict(False, f"{consumer} read every element after the pending write ({context})")
        """
    )


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    scenario = params.get("stream_scenario")
    if scenario == "numba-export" and group.get("role") == "producer":
        # numba's export of arrays made on its streams: the default stream's is the one at
        # fault where a group is filed (the others export their handles)
        from caiconform.report.standalone import schema

        n = max(int(np.prod(params.get("shape") or [2])), 2)
        made = {"typestr": "<f4", "shape": [n], "seed": 0, "stream_scenario": "library-default"}
        return schema.producer_script(group, made, producer, consumer)
    if scenario in NUMBA_SCENARIOS or not isinstance(scenario, str):
        return None
    array = array_of({**params, "layout": {"shape": params.get("shape") or [], "strides": None}})
    if array is None or array.size == 0:
        return None
    rule = group.get("rule") or ""
    if group.get("role") == "producer" and rule not in (
        "CAI-PORT-V2-PENDING",
        "CAI-SYNC-PRODUCER-SUFFICIENT",
        "CAI-SYNC-PRODUCER-MULTI-STREAM",
    ):
        from caiconform.report.standalone import schema

        return schema.producer_script(group, params, producer, consumer)
    producer_side = group.get("role") == "producer"
    # a producer's group is read by a conforming consumer: it waits on the exported stream,
    # and on none where the dict names none (version 2: "no synchronization is implied")
    reads = "reference" if producer_side else (consumer or "reference")
    context = ex.context_of(array, f" ({scenario} work from {producer})")
    s = Script(
        f"streams: {producer} leaves its final write pending ({scenario}) and {reads} reads "
        f"{array.typestr} {array.shape} at once [{rule}]."
    )
    ex.header(s, group)
    ex.values(s, array)
    if not ex.reader(s, reads, array):
        return None
    keep_library = producer_side or group.get("outcome") == "rejected-valid"
    if keep_library and producer not in (None, "reference"):
        if not pending_producer(s, producer, scenario, array):
            return None
    else:
        if producer not in (None, "reference"):
            s.comment(
                f"The producer is written here with the driver in place of {producer}: it "
                "exports the stream its work is pending on, so an early read is the consumer's."
            )
        reference_pending(s, array, scenario)
    expected = (
        "an export made after the work, or a v3 export naming its stream"
        if rule == "CAI-PORT-V2-PENDING"
        else "every element after the write"
        if not producer_side
        else "an exported stream covering the pending work"
    )
    _read_early(s, group, reads, context, expected)
    return s.render()
