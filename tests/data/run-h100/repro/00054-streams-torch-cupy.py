"""Reproducer for streams torch -> cupy (fail, CAI-SYNC-CONSUMER)."""

import json

PARAMS = json.loads(
    '{"layout": {"shape": [1024], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "typestr": "<f8", "stream": "pending"}'
)

print(PARAMS)
