"""The stream scenarios: the states of a producer's stream an exchange is run in, named once for
the adapters that play them, the reference producer, the strategies that draw them and the
checks that judge them.
"""

from __future__ import annotations

__all__ = ["STREAM_SCENARIOS", "LIBRARY_STREAM_SCENARIOS"]

#: Stream scenarios a producer can be asked for. `none`: work finished, stream None;
#: `legacy`/`per-thread`: stream 1/2; `pending`: final values written after a spin-delay on the
#: producer's own stream, which is exported; `multi-stream`: work on two streams, exported on a
#: third that waits on both; `unsynced`: pending work on a stream that is NOT exported (wrong on
#: purpose). The library's own streams, as its users hold them (pending work on each, the
#: array's interface read while that stream is the library's current one, as user code does
#: inside `with stream:`): `nonblocking`: a non-blocking stream made the library's way;
#: `external`: a raw non-blocking cudaStream_t wrapped by the library's external-stream API;
#: `library-default`: the stream object the library calls its default stream.
STREAM_SCENARIOS = (
    "none",
    "legacy",
    "per-thread",
    "pending",
    "multi-stream",
    "unsynced",
    "nonblocking",
    "external",
    "library-default",
)
#: the scenarios played on a stream the library hands its users (see above)
LIBRARY_STREAM_SCENARIOS = ("nonblocking", "external", "library-default")
