"""A refusal by the producer's `__dlpack__`, judged and filed against the producer: the one
helper every DLPack family files such a refusal with.

The catalogue lays a refusal of valid input on the consumer, and a producer's `__dlpack__`
refusing what it was asked is the producer's: `producer_refused` names the producer the library
at fault. What is judged differs only by who made the refused call, which is the function's
parameters: a family's own call (the producer families: only BufferError is the refusal the
text asks for [DLPACK-EXPORT-BUFFERERROR]) or a consumer's request seen through `DLPackOnly`
(the exchange families: any refusal is `rejected`, a stream being optional to support
[DLPACK-STREAM-OPTIONAL]). Its own module, below every family, since both kinds of family use it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["producer_refused"]


def producer_refused(
    refusal: Any, producer: str | None, context: str = "", *, request: dict | None = None
) -> Any:
    """A refusal by the producer's `__dlpack__`, as a Result filed against the producer: the
    catalogue lays a refusal of valid input on the consumer, and a producer's `__dlpack__`
    refusing what it was asked is the producer's. One judgement, reached three ways:

    - `refusal` a Result, a family's verdict on its own call: a `rejected` one of valid input
      (expected other than EXPECT_REJECTION) names `producer` the library at fault; any other
      is returned as it is;
    - `refusal` the exception the family's own call raised (`request` None): BufferError is the
      refusal the text asks for where data cannot be exported (`rejected`, then named as
      above), anything else breaks DLPACK-EXPORT-BUFFERERROR (`fail`);
    - `refusal` the exception raised on a consumer's request (`request` its keywords, one of
      `DLPackOnly.refusals`): `rejected` whatever was raised, under DLPACK-STREAM-OPTIONAL
      when the request named a stream (a stream other than None is optional to support), else
      DLPACK-EXPORT-BUFFERERROR, and named as refusing the consumer's request.
    """
    from caiconform.checks import _results
    from caiconform.results.outcome import REJECTED, Result
    from caiconform.results.record import EXPECT_REJECTION

    why = "the producer's __dlpack__ refused what the consumer asked"
    if isinstance(refusal, BaseException) and request is not None:
        stream = request.get("stream")
        rule = "DLPACK-STREAM-OPTIONAL" if stream is not None else "DLPACK-EXPORT-BUFFERERROR"
        seen = f"__dlpack__({request}) raised {_results.describe_exception(refusal)}"
        expected = "a capsule for the consumer's request, or BufferError"
        message = _results.finding_message(rule, seen, expected, context)
        refusal = Result(REJECTED, rule, message, seen, expected)
        why = "the producer's __dlpack__ refused the consumer's request"
    elif isinstance(refusal, BufferError):
        refusal = _results.rejected(
            "DLPACK-EXPORT-BUFFERERROR", refusal, "a capsule, or this BufferError", context
        )
    elif isinstance(refusal, BaseException):
        return _results.failed(
            "DLPACK-EXPORT-BUFFERERROR",
            _results.describe_exception(refusal),
            "a capsule, or BufferError for data that cannot be exported",
            context,
        )
    if refusal.outcome == REJECTED and refusal.expected != EXPECT_REJECTION and producer:
        refusal.culprit = {"library": producer, "role": "producer", "why": why}
    return refusal
