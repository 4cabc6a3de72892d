"""Reproducer for roundtrip numba -> torch (rejected, CAI-PORT-NEGATIVE-STRIDES)."""

import json

PARAMS = json.loads(
    '{"layout": {"shape": [5], "strides": [-4], "offset": 16, "pad": 0, "kind": "negative", "portable": true}, "typestr": "<f4", "stream": "none"}'
)

print(PARAMS)
