"""Sub-commands of the `caiconform` CLI, one module each (see `caiconform.cli.COMMANDS`).

Each module defines `add_arguments(parser)` and `run(args) -> int` and imports what it needs
inside `run`, so building the parser stays cheap.
"""
