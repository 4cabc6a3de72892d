"""cleanlib after a bad change: its views export their allocation's base pointer instead of
their first element's [CAI-PRODUCER-DESCRIBES-DATA]. Run under `--cai-name cleanlib`."""
