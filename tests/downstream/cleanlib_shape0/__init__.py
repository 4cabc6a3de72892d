"""cleanlib after a bad change in its consumer: it reads `shape[0]` of every CAI object it
takes, an IndexError on every 0-d array, a failure mode its baseline does not hold although it
holds an entry for the same rule and outcome. Run under `--cai-name cleanlib`."""
