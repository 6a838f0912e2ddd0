"""The ``harness`` command: argument parsing, commands, loop.toml, the runner and ``init`` templates."""
