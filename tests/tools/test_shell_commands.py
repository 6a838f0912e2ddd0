"""How a command line is read for the permission rules: every shell's script, every wrapper
option, ``find``'s actions and the nesting limit, each read to the program it runs (so that a
deny rule names it) rather than only refused as unreadable."""

from __future__ import annotations

import pytest

from harness.tools.permissions import Permissions
from harness.tools.shell_commands import Unreadable, commands

RULES = Permissions(deny=["run_shell(git push*)"])


def _denied_by_the_rule(line: str) -> None:
    """``line`` is read to the ``git push`` it runs and denied by its rule, not as unreadable."""
    decision = RULES.decide("run_shell", {"command": line})
    assert (decision.verdict, decision.source, decision.rule) == (
        "deny",
        "rule",
        "run_shell(git push*)",
    ), decision
    assert decision.subject.startswith("git push")


SHELLS = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh"]


@pytest.mark.parametrize("shell", SHELLS)
def test_every_shell_s_script_is_read(shell: str) -> None:
    _denied_by_the_rule(f'{shell} -c "git push"')
    _denied_by_the_rule(f'/bin/{shell} -ec "echo x; git push origin"')
    assert commands(f"{shell} -c 'git push'") == [(shell, "-c", "git push"), ("git", "push")]


@pytest.mark.parametrize(
    "options",
    ["-o pipefail", "+o posix", "-O extglob", "+O extglob", "--rcfile r.sh", "--init-file r.sh"],
)
def test_a_shell_option_s_value_is_not_taken_for_the_script(options: str) -> None:
    _denied_by_the_rule(f'bash {options} -c "git push"')
    assert commands(f"bash {options} -c 'git push'")[1:] == [("git", "push")]
    # the value is not a script file either: with no -c, the shell reads standard input
    with pytest.raises(Unreadable, match="standard input"):
        commands(f"echo git push | bash {options}")


@pytest.mark.parametrize("line", ["echo git push | bash -s x", "bash --stdin x < cmds", "sh -s"])
def test_a_shell_told_to_read_standard_input_is_unreadable(line: str) -> None:
    with pytest.raises(Unreadable, match="reads its commands from standard input"):
        commands(line)
    decision = RULES.decide("run_shell", {"command": line})
    assert (decision.verdict, decision.source) == ("deny", "unreadable")


def test_a_script_file_is_judged_as_the_command_it_is() -> None:
    assert commands("bash -e build.sh x") == [("bash", "-e", "build.sh", "x")]
    assert commands("bash -- build.sh") == [("bash", "--", "build.sh")]
    with pytest.raises(Unreadable, match="standard input"):
        commands("bash -")
    with pytest.raises(Unreadable, match=r"-c has no script"):
        commands("bash -c")


def test_busybox_runs_its_first_word_as_the_program() -> None:
    _denied_by_the_rule("busybox git push")
    _denied_by_the_rule("busybox sh -c 'git push'")
    _denied_by_the_rule("/bin/busybox env git push")
    assert commands("busybox") == [("busybox",)]
    assert commands("busybox ls -l") == [("busybox", "ls", "-l"), ("ls", "-l")]


WRAPPED = [
    "command git push",
    "command -p git push",
    "command -v git push",
    "command -V git push",
    "builtin git push",
    "exec git push",
    "exec -a name git push",
    "exec -c git push",
    "exec -l git push",
    "exec -c -l -- git push",
    "nohup git push",
    "command time git push",
    "command time -f %e git push",
    "command time -o out.txt git push",
    "command time -p git push",
    "command time -v git push",
    "command time -a -o out.txt git push",
    "nice git push",
    "nice -n 5 git push",
    "nice -n5 git push",
    "nice -5 git push",
    "nice --adjustment 5 git push",
    "nice --adjustment=5 git push",
    "ionice -c 2 git push",
    "ionice -n 7 git push",
    "ionice -p 1 git push",
    "ionice -t git push",
    "setsid git push",
    "setsid -f git push",
    "setsid -w git push",
    "setsid -c git push",
    "stdbuf -i 0 git push",
    "stdbuf -o L git push",
    "stdbuf -e 0 git push",
    "stdbuf -oL -eL git push",
    "timeout 5 git push",
    "timeout -s KILL 5 git push",
    "timeout -k 1 5 git push",
    "timeout --signal TERM 5 git push",
    "timeout --signal=TERM 5 git push",
    "timeout --kill-after=1 5 git push",
    "timeout -v 5 git push",
    "timeout --verbose 5 git push",
    "timeout --preserve-status 5 git push",
    "timeout --foreground 5 git push",
    "sudo git push",
    *(f"sudo {option} x git push" for option in ("-u", "-g", "-C", "-D", "-h", "-p", "-r")),
    *(f"sudo {option} x git push" for option in ("-t", "-U", "-T")),
    *(f"sudo {option} git push" for option in ("-E", "-H", "-n", "-P", "-S", "-b", "-i")),
    *(f"sudo {option} git push" for option in ("-s", "-k", "-K", "-A", "-B")),
    "doas git push",
    "doas -u root git push",
    "doas -C doas.conf git push",
    "doas -n git push",
    "doas -s git push",
    "env git push",
    "env X=1 git push",
    "env -u X git push",
    "env --unset X git push",
    "env --unset=X git push",
    "env -C sub git push",
    "env --chdir sub git push",
    "env --chdir=sub git push",
    "env -i git push",
    "env --ignore-environment git push",
    "env -0 git push",
    "env --null git push",
    "env -v git push",
    "env --debug git push",
    "env - git push",
    "env -- git push",
    "nice -n 1 timeout 5 env X=1 setsid stdbuf -oL git push",
]


@pytest.mark.parametrize("line", WRAPPED)
def test_every_wrapper_option_is_read_through_to_the_command(line: str) -> None:
    _denied_by_the_rule(line)
    assert commands(line)[-1] == ("git", "push")


@pytest.mark.parametrize(
    "line", ["setsid --fork git push", "stdbuf --output=L git push", "exec -x git push"]
)
def test_a_wrapper_option_not_known_here_is_unreadable(line: str) -> None:
    with pytest.raises(Unreadable, match="is not known here"):
        commands(line)


def test_a_wrapper_with_nothing_to_run_is_only_itself() -> None:
    for line in ("setsid", "stdbuf -oL", "timeout 5", "env X=1", "nice -n 5", "sudo -u root"):
        assert commands(line) == [tuple(line.split())]


@pytest.mark.parametrize(
    "line",
    [
        "find . -exec git push \\;",
        "find . -execdir git push {} +",
        "find . -ok git push \\;",
        "find . -okdir git push ';'",
        "find . -name x -exec echo {} \\; -exec git push \\;",
    ],
)
def test_every_find_action_that_runs_a_command_is_read(line: str) -> None:
    _denied_by_the_rule(line)


@pytest.mark.parametrize(
    "line", ["find . -exec", "find . -exec \\;", "find . -exec ';' -print", "find . -execdir +"]
)
def test_find_with_an_action_that_names_no_command_is_only_find(line: str) -> None:
    assert commands(line) == [tuple(line.replace("\\", "").replace("'", "").split())]
    assert RULES.decide("run_shell", {"command": line}).verdict == "allow"


def test_the_nesting_limit_is_eight_and_one_more_is_unreadable() -> None:
    assert commands("eval " * 8 + "git push")[-1] == ("git", "push")
    _denied_by_the_rule("eval " * 8 + "git push")
    with pytest.raises(Unreadable, match="nest more than 8 deep"):
        commands("eval " * 9 + "git push")
    decision = RULES.decide("run_shell", {"command": "eval " * 9 + "ls"})
    assert (decision.verdict, decision.source) == ("deny", "unreadable")
