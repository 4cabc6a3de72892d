"""Reproducer for schema torch -> None (fail, CAI-DATA-ZERO-SIZE-NULL)."""

import json

PARAMS = json.loads(
    '{"layout": {"shape": [0, 3], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "typestr": "<i8", "stream": "none"}'
)

print(PARAMS)
