"""How a command line is read for the permission rules: every shell's script, every wrapper
option, ``find``'s actions and the nesting limit, each read to the program it runs (so that a
deny rule names it) rather than only refused as unreadable."""

from __future__ import annotations

import re
import shlex

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


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_a_lone_plus_does_not_end_a_shell_s_options(shell: str) -> None:
    _denied_by_the_rule(f"{shell} + -c 'git push'")
    _denied_by_the_rule(f"{shell} + -e + -c 'git push'")
    with pytest.raises(Unreadable, match="standard input"):
        commands(f"echo git push | {shell} +")


def test_a_script_file_is_judged_as_the_command_it_is() -> None:
    assert commands("bash -e build.sh x") == [("bash", "-e", "build.sh", "x")]
    assert commands("bash -- build.sh") == [("bash", "--", "build.sh")]
    assert commands("bash -- +c x") == [("bash", "--", "+c", "x")]  # a script file named +c
    with pytest.raises(Unreadable, match=r"standard input \(-c\)"):  # not an option after --
        commands("bash -- -c 'git push'")
    with pytest.raises(Unreadable, match="standard input"):
        commands("bash -")
    with pytest.raises(Unreadable, match=r"-c has no script"):
        commands("bash -c")


def test_a_shell_s_script_is_its_first_word_after_c() -> None:
    _denied_by_the_rule("bash -c 'git push' name arg")
    _denied_by_the_rule("trap -- 'git push' EXIT")
    assert commands("/usr/bin/ x") == [("/usr/bin/", "x")]  # no last path part: named as given


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


@pytest.mark.parametrize(
    "tail",
    ["sh -c ls", "bash -ec ls", "watch ls", "su -c ls", "trap ls EXIT", "git rebase -x ls main",
     "git bisect run ls", "git submodule foreach ls"],
)  # fmt: skip
def test_every_script_read_in_turn_counts_one_level_of_nesting(tail: str) -> None:
    assert commands("eval " * 7 + tail)[-1] == ("ls",)
    with pytest.raises(Unreadable, match="nest more than 8 deep"):
        commands("eval " * 8 + tail)


def test_the_nesting_limit_is_eight_and_one_more_is_unreadable() -> None:
    assert commands("eval " * 8 + "git push")[-1] == ("git", "push")
    _denied_by_the_rule("eval " * 8 + "git push")
    with pytest.raises(Unreadable, match="nest more than 8 deep"):
        commands("eval " * 9 + "git push")
    decision = RULES.decide("run_shell", {"command": "eval " * 9 + "ls"})
    assert (decision.verdict, decision.source) == ("deny", "unreadable")


RM = Permissions(deny=["run_shell(rm *)"])


def _rm_denied_by_its_rule(line: str) -> None:
    decision = RM.decide("run_shell", {"command": line})
    assert (decision.verdict, decision.source, decision.rule) == ("deny", "rule", "run_shell(rm *)")
    assert decision.subject.startswith("rm ")


@pytest.mark.parametrize(
    "line",
    [
        "watch git push",
        "watch 'git push'",
        "watch -d git push",
        "watch --differences git push",
        "watch -q 3 git push",
        "watch --equexit 3 git push",
        "watch -n 1 git push",
        "watch -n1 git push",
        "watch --interval=2 git push",
        "watch -b -c -e -g -p -t -w -x git push",
        "watch --beep --color --errexit --chgexit --precise --no-title --no-wrap --exec git push",
        "su -c 'git push'",
        "su -c 'git push' root",
        "su root -c 'git push'",
        "su - root -c 'git push'",
        "su -l -m -p -f -P -c 'git push' root",
        "su --login --preserve-environment --fast --pty -c 'git push'",
        "su -g users -G wheel -w PATH -c 'git push' root",
        "su --group=users --supp-group wheel --whitelist-environment=X -c 'git push'",
        "su --command='git push' root",
        "su --command 'git push' root",
        "su --session-command='git push'",
        "runuser -l nobody -c 'git push'",
    ],
)
def test_watch_and_su_scripts_are_read(line: str) -> None:
    _denied_by_the_rule(line)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("watch -Z git push", "option '-Z' is not known"),
        ("su -lc 'git push'", "option '-lc' is not known"),
        ("su -s /usr/bin/git root -c push", "option '-s' is not known"),
        ("runuser -u nobody git push", "option '-u' is not known"),
        ("su root -- -c 'git push'", "option '--' is not known"),
        ("echo git push | su", "not one -c script"),
        ("su root <<< 'git push'", "not one -c script"),
        ("su -c ls -c 'git push'", "not one -c script"),
        ("su -c ls root x", "not one -c script"),
    ],
)
def test_su_and_watch_spelled_another_way_are_unreadable(line: str, why: str) -> None:
    with pytest.raises(Unreadable, match=why):
        commands(line)


def test_su_watch_and_their_plain_uses() -> None:
    assert commands("su -c ls root") == [("su", "-c", "ls", "root"), ("ls",)]
    assert commands("watch -n 5 ls -l") == [("watch", "-n", "5", "ls", "-l"), ("ls", "-l")]
    assert commands("watch") == [("watch",)]
    assert RULES.decide("run_shell", {"command": "watch -d git status"}).verdict == "allow"


@pytest.mark.parametrize(
    "name",
    [
        "HOME", "XDG_CONFIG_HOME", "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",
        "BASH_ENV", "ENV", "PROMPT_COMMAND", "PS4", "SHELLOPTS", "BASHOPTS", "IFS", "EDITOR",
        "VISUAL", "PAGER", "SSH_ASKPASS", "CDPATH", "GLOBIGNORE", "GIT_ANYTHING",
    ],
)  # fmt: skip
def test_every_variable_that_changes_what_runs_is_unreadable_when_set(name: str) -> None:
    for line in (f"{name}=x ls", f"env {name}=x ls", f"export {name}=x; ls", f"{name}+=x ls"):
        with pytest.raises(Unreadable, match=f"{re.escape(name)} is set on the line"):
            commands(line)
    for declaring in ("declare", "typeset", "local", "readonly"):
        with pytest.raises(Unreadable, match="is set on the line"):
            commands(f"f() {{ {declaring} {name}=x; ls; }}")
    assert commands(f"echo {name}=x") == [("echo", f"{name}=x")]  # an argument, not a setting


def test_a_function_passed_in_the_environment_is_unreadable() -> None:
    for line in ("env 'BASH_FUNC_ls%%=() { git push; }' bash -c ls", "export BASH_FUNC_f%%=x; f"):
        with pytest.raises(Unreadable, match="BASH_FUNC_.* is set on the line"):
            commands(line)


OPAQUE = [
    "script", "flock", "taskset", "chrt", "prlimit", "setpriv", "ssh-agent", "unshare", "nsenter",
    "chroot", "systemd-run", "strace", "ltrace", "valgrind", "numactl", "cgexec", "faketime",
    "unbuffer", "rlwrap", "torsocks", "proxychains", "proxychains4", "fakeroot", "firejail",
    "bwrap", "parallel", "sem", "tmux", "screen", "dtach", "expect", "run-parts", "gdb", "perf",
    "daemonize", "start-stop-daemon", "pkexec", "sg", "newgrp", "dbus-launch", "xvfb-run",
    "catchsegv", "ssh", "sshpass", "setarch", "linux32", "linux64", "cpulimit", "trickle",
    "chpst", "direnv", "nix-shell", "enable", "xargs",
]  # fmt: skip


@pytest.mark.parametrize("program", OPAQUE)
def test_every_program_that_runs_another_unread_is_unreadable(program: str) -> None:
    with pytest.raises(Unreadable, match=f"{program} runs a command in a way not read here"):
        commands(f"{program} git push")
    with pytest.raises(Unreadable, match="not read here"):
        commands(f"nice /usr/bin/{program} ls")


def test_coproc_is_unreadable_as_a_keyword_and_as_a_program_s_name() -> None:
    with pytest.raises(Unreadable, match="not parsed"):
        commands("coproc git push")
    with pytest.raises(Unreadable, match="coproc runs a command in a way not read here"):
        commands("env coproc git push")


@pytest.mark.parametrize(
    "line",
    [
        "git rebase -x 'rm -rf tests' main",
        "git rebase --exec 'rm -rf tests' main",
        "git difftool -x 'rm -rf tests'",
        "git difftool --extcmd 'rm -rf tests'",
        "git archive --exec='rm -rf tests' HEAD",
        *(
            f"git filter-branch {option} 'rm -rf tests' HEAD"
            for option in (
                "--setup", "--tree-filter", "--index-filter", "--msg-filter", "--commit-filter",
                "--env-filter", "--parent-filter", "--tag-name-filter",
            )
        ),
        "git grep -O 'rm -rf tests' x",
        "git grep --open-files-in-pager='rm -rf tests' x",
        "git fetch --upload-pack 'rm -rf tests' origin",
        "git fetch --exec='rm -rf tests' origin",
        "git pull --upload-pack='rm -rf tests' origin",
        "git pull --exec 'rm -rf tests' origin",
        "git ls-remote -u 'rm -rf tests' origin",
        "git ls-remote --upload-pack='rm -rf tests' origin",
        "git ls-remote --exec='rm -rf tests' origin",
        "git clone -u 'rm -rf tests' . copy",
        "git clone --upload-pack='rm -rf tests' . copy",
        "git clone --exec='rm -rf tests' . copy",
        "git push --receive-pack='rm -rf tests' origin",
        "git push --exec 'rm -rf tests' origin",
        "git send-pack --receive-pack='rm -rf tests' origin",
        "git send-pack --exec='rm -rf tests' origin",
        "git -C . --namespace n --super-prefix p/ --list-cmds main rebase -x 'rm -rf tests' main",
        "git --namespace n rebase -x 'rm -rf tests' main",
        "git --super-prefix p/ rebase -x 'rm -rf tests' main",
        "git --list-cmds main rebase -x 'rm -rf tests' main",
        "git bisect run rm -rf tests",
        "git bisect run 'true; rm -rf tests'",
        "git submodule foreach 'true; rm -rf tests'",
        "git --no-pager rebase -x 'rm -rf tests' main",
        "git -p --bare rebase -x 'rm -rf tests' main",
        "git bisect run 'rm -rf tests'",
        "git submodule foreach 'rm -rf tests'",
    ],
)  # fmt: skip
def test_every_git_option_that_runs_a_command_is_read(line: str) -> None:
    _rm_denied_by_its_rule(line)


@pytest.mark.parametrize(
    "line",
    [
        "git config --get user.name '^a'",
        "git config --get-all remote.origin.url '^h'",
        "git config --get-regexp '^user' '^a'",
        "git config --get-urlmatch http https://example.com",
        "git config --list",
        "git config -l",
        "git config get --all user.name",
        "git config list",
        "git config list --file x.cfg",
        "git config --show-origin core.editor vim",
        "git config --show-scope core.editor vim",
        "git config --name-only core.editor vim",
        "git config user.name",
    ],
)
def test_git_config_reading_is_read_as_itself(line: str) -> None:
    assert commands(line) == [tuple(line.replace("'", "").split())]


def test_git_config_writing_or_configuration_on_the_line_is_unreadable() -> None:
    for line in ("git config user.name x", "git config core.pager 'git push'", "git -c a.b=c s"):
        with pytest.raises(Unreadable, match="configuration|config"):
            commands(line)


@pytest.mark.parametrize(
    "line",
    [
        "git clone -c alias.s='!git push' . copy && git -C copy s",
        "git clone --config ALIAS.s='!git push' . copy && git -C copy s",
        "git clone -c include.path=../x.cfg . copy && git -C copy s",
        "git clone -c includeIf.onbranch:main.path=../x.cfg . copy && git -C copy s",
    ],
)
def test_an_alias_or_include_set_for_a_new_clone_is_unreadable(line: str) -> None:
    with pytest.raises(Unreadable, match="a git alias or include is named on the line"):
        commands(line)


@pytest.mark.parametrize(
    "line",
    [
        "bash /proc/thread-self/fd/0 <<< 'git push'",
        "bash /dev/stdin arg <<< 'git push'",
        ". /dev/stdin arg <<< 'git push'",
        "bash /dev/fd/3 3< cmds",
        "source /proc/self/fd/0 <<< 'git push'",
        "echo ${x:-`git push`}",
        "echo ${x:-$(git push)}",
    ],
)
def test_standard_input_and_substitutions_in_expansions_are_unreadable(line: str) -> None:
    with pytest.raises(Unreadable):
        commands(line)


def test_a_program_under_the_home_folder_and_its_path_are_read() -> None:
    _denied_by_the_rule("~/bin/git push")
    _denied_by_the_rule("~/git push")
    assert commands("~/bin/ls") == [("ls",)]


def test_what_trap_git_and_builtins_run_when_they_run_nothing_else() -> None:
    for line in ("trap", "trap --", "trap INT", "trap -p", "trap -l", "trap -lp EXIT", "git",
                 "git -C", "git bisect run", "git rebase -- main", "git rebase -x '' main",
                 "source", "hash -r python", "export PATH", "nohup -", "ls ~"):  # fmt: skip
        found = commands(line)
        assert found[0] == tuple(shlex.split(line)), line
        assert found[1:] in ([], [("-",)]), line
    assert commands("nohup -") == [("nohup", "-"), ("-",)]  # a program named -
    for line in ("trap -x 'git push' EXIT", "trap -x -p x"):
        with pytest.raises(Unreadable, match="trap: option '-x' is not known"):
            commands(line)
    with pytest.raises(Unreadable, match="git rebase -ix: an option that runs a command, bundled"):
        commands("git rebase -ix 'git push' main")
    with pytest.raises(Unreadable, match=r"standard input \(/dev/stdin\)"):
        commands("bash /dev/stdin arg")


@pytest.mark.parametrize(
    "line",
    [
        "git submodule -q foreach 'rm -rf tests'",
        "git submodule --quiet foreach --recursive 'rm -rf tests'",
        "git submodule foreach -- 'rm -rf tests'",
        "git submodule foreach -- rm -rf tests",
        "git bisect run -- rm -rf tests",
        "git rebase --e 'rm -rf tests' main",
    ],
)
def test_git_s_quiet_options_and_cut_long_options_are_read_through(line: str) -> None:
    _rm_denied_by_its_rule(line)


def test_a_substitution_is_named_where_it_hides() -> None:
    with pytest.raises(Unreadable, match="a here-document holds a command substitution"):
        commands("cat <<EOF\n$(git push)\nEOF")
    with pytest.raises(Unreadable, match="a parameter expansion holds a command substitution"):
        commands("echo ${x:-$(git push)}")
