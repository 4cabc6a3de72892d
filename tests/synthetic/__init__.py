"""Synthetic libraries and a synthetic check family that misbehave on purpose, so the runner's
isolation can be tested on a machine without a GPU."""
