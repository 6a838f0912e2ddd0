"""Reading pytest's command line: which arguments are the paths it runs."""

from __future__ import annotations

_VALUE_OPTIONS = frozenset(
    # pytest's own
    "-k -m -p -o -c -W -r --pythonwarnings --config-file --override-ini --maxfail --pdbcls "  # noqa: SIM905
    "--capture --lfnf --last-failed-no-failures --durations --durations-min --verbosity --tb "
    "--show-capture --color --code-highlight --pastebin --junitxml --junit-xml --junit-prefix "
    "--ignore --ignore-glob --deselect --confcutdir --import-mode --doctest-report "
    "--doctest-glob --rootdir --basetemp --debug --assert --log-level --log-format "
    "--log-date-format --log-cli-level --log-cli-format --log-cli-date-format --log-file "
    "--log-file-mode --log-file-level --log-file-format --log-file-date-format "
    "--log-auto-indent --log-disable "
    # common plugins: coverage, xdist, timeout, rerunfailures, randomly, hypothesis, asyncio
    "--cov --cov-report --cov-config --cov-fail-under --cov-context -n --numprocesses "
    "--maxprocesses --dist --tx --rsyncdir --timeout --timeout-method --timeout_method "
    "--session-timeout --reruns --reruns-delay --only-rerun --randomly-seed "
    "--hypothesis-profile --hypothesis-seed --hypothesis-verbosity --asyncio-mode "
    "--anyio-mode --html --css --json-report-file --ds --dc".split()
)
"""pytest options (core and common plugins) whose value may be the next argument."""


def positional_paths(args: list[str]) -> tuple[str, ...]:
    """The positional paths in pytest ``args``, node ids cut to their file; () for none.

    An option's value (``--cov src``, ``-k slow``, ``-xk slow``) is not a path.
    """
    return tuple(dict.fromkeys(args[index].split("::")[0] for index in positions(args)))


def positions(args: list[str]) -> list[int]:
    """Where the positional arguments (paths and node ids) stand in pytest ``args``."""
    found: list[int] = []
    takes_value = options_done = False
    for index, arg in enumerate(args):
        if takes_value:
            takes_value = False
        elif options_done or not arg.startswith("-") or arg == "-":
            found.append(index)
        elif arg == "--":
            options_done = True
        else:
            takes_value = _value_follows(arg)
    return found


def _value_follows(option: str) -> bool:
    """Whether ``option`` takes the next argument as its value."""
    if option.startswith("--"):
        return "=" not in option and option in _VALUE_OPTIONS
    letters = option[1:]  # a cluster of short options: -xk EXPR, or -kEXPR with the value in it
    for index, letter in enumerate(letters):
        if f"-{letter}" in _VALUE_OPTIONS:
            return index == len(letters) - 1
    return False
