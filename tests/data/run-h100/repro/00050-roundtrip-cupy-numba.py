"""Reproducer for roundtrip cupy -> numba (crash, None)."""

import json

PARAMS = json.loads(
    '{"layout": {"shape": [5], "strides": [-4], "offset": 16, "pad": 0, "kind": "negative", "portable": true}, "typestr": "<f4", "stream": "none"}'
)

print(PARAMS)
