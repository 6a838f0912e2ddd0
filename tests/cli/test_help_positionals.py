"""Every positional argument of every subcommand says in ``--help`` what it is."""

from __future__ import annotations

import argparse

from harness.cli.main import build_parser


def unexplained(name: str, parser: argparse.ArgumentParser) -> list[str]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                found += unexplained(f"{name} {sub}".strip(), subparser)
        elif not action.option_strings and not action.help:
            found.append(f"{name} {action.dest}")
    return found


def test_every_positional_argument_has_help() -> None:
    assert unexplained("", build_parser()) == []


def test_runs_says_what_its_folder_is() -> None:
    runs = build_parser()._subparsers._group_actions[0].choices["runs"]  # type: ignore[union-attr]
    assert "the folder whose runs and loops' runs are listed (default .)" in runs.format_help()
