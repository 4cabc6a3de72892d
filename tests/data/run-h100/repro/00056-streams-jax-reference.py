"""Reproducer for streams jax -> reference (hang, None)."""

import json

PARAMS = json.loads(
    '{"layout": {"shape": [1024], "strides": null, "offset": 0, "pad": 0, "kind": "C", "portable": true}, "typestr": "<f8", "stream": "pending"}'
)

print(PARAMS)
