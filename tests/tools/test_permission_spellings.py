"""Permission rules fail closed: every spelling below of `git push`, `rm` or a write under
tests/ is denied (or asked, with `unreadable = "ask"`), never allowed; and the plain commands
those rules leave alone still are (see docs/agent-and-tools.md, "What the rules stop")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.tools.permissions import Permissions

RULES = Permissions(
    deny=["run_shell(git push*)", "run_shell(rm *)", "write_file(tests/*)", "edit_file(tests/*)"]
)
WS = "{ws}"  # the workspace's absolute path, filled in per test

FROM_THE_ISSUE = [
    "echo push origin main | xargs git",
    "xargs -a args.txt git",
    "xargs --arg-file=args.txt git",
    "echo tests | xargs rm -rf",
    "echo 'git push' | sh -",
    "echo 'git push' | bash -",
    "echo 'git push' | bash /dev/stdin",
    ". /dev/stdin <<X\ngit push\nX",
    "source /dev/stdin <<< 'git push'",
    "bash -c '{git,push,origin,main}'",
    "{rm,-rf,tests}",
    "trap -- 'git push' EXIT",
    "trap -- 'rm -rf tests' EXIT",
    "printf -v 'a[$(git push)]' x",
    "read 'a[$(git push)]' <<< x",
    "mapfile -C 'git push' -c 1 a <<< x",
    "env 'BASH_FUNC_g%%=() { git push; }' bash -c g",
    "git --config-env=alias.p=P p",
    "git --config-env alias.p=P p",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p",
    "GIT_CONFIG_PARAMETERS=\"'alias.p=push'\" git p",
    "git -c include.path=x.cfg p",
    "HOME=. git p",
    "env HOME=. git p",
    "export HOME=.; git p",
    "GIT_CONFIG_GLOBAL=x.cfg git p",
    "env GIT_CONFIG_GLOBAL=x.cfg git p",
    "git -c core.fsmonitor='git push' status",
    "script -qc 'git push' /dev/null",
    "flock /tmp/l git push",
    "taskset -c 0 git push",
    "chrt -o 0 git push",
    "prlimit --nofile=64 git push",
    "setpriv --no-new-privs git push",
    "ssh-agent git push",
    "timeout 5 xargs git < args.txt",
    ("write_file", f"{WS}/tests/test_a.py"),
    ("edit_file", f"{WS}/tests/test_a.py"),
    ("write_file", "lnk/test_a.py"),
    ("edit_file", "lnk/test_a.py"),
    ("write_file", "alias.py"),
    ("write_file", "hard.py"),
]

OUR_OWN = [
    # programs that run another, not read here
    "unshare -r git push",
    "nsenter -t 1 -m git push",
    "chroot / git push",
    "systemd-run --user git push",
    "strace -f -o /dev/null git push",
    "ltrace git push",
    "valgrind git push",
    "numactl -N 0 git push",
    "faketime now git push",
    "unbuffer git push",
    "fakeroot rm -rf tests",
    "parallel git ::: push",
    "tmux new -d 'git push'",
    "screen -dm git push",
    "expect -c 'spawn git push'",
    "gdb -batch -ex 'shell git push'",
    "run-parts ./hooks",
    "pkexec git push",
    "sg users -c 'git push'",
    "xvfb-run git push",
    "setarch x86_64 git push",
    "cpulimit -l 50 -- git push",
    "ssh localhost git push",
    "busybox xargs git < args.txt",
    "nice -n 5 xargs rm < list",
    "find . -name '*.py' -print0 | xargs -0 rm",
    # variables that change what runs, set on the line
    "PATH=.:$PATH git status",
    "LD_PRELOAD=./evil.so ls",
    "BASH_ENV=./x.sh bash -c true",
    "ENV=./x.sh sh -c true",
    "PS4='$(git push)' bash -xc true",
    "GIT_SSH_COMMAND='sh -c \"git push\"' git fetch",
    "GIT_EXEC_PATH=. git status",
    "GIT_ASKPASS=./x git fetch",
    "GIT_EDITOR='rm -rf tests' git commit",
    "GIT_PAGER='git push' git log",
    "GIT_DIR=evil.git git p",
    "XDG_CONFIG_HOME=. git p",
    "declare -x HOME=.; git p",
    "typeset -x GIT_CONFIG_GLOBAL=x.cfg; git p",
    "export GIT_CONFIG_PARAMETERS=\"'alias.p=push'\"; git p",
    "readonly PATH=.; git status",
    "env 'BASH_FUNC_ls%%=() { rm -rf tests; }' bash -c ls",
    # git configuration given or written on the line
    "git -c alias.s='!rm -rf tests' s",
    "git -c core.pager='git push' log",
    "git -c core.sshCommand='git push' fetch",
    "git --exec-path=. status",
    "git --git-dir=evil.git p",
    "git --work-tree=. --git-dir=x p",
    "git config alias.p push && git p",
    "git config --global include.path x.cfg",
    "git config core.hooksPath hooks && git commit -m x",
    "git -C sub config alias.p push",
    # git commands that run a command given in their words
    "git rebase -x 'git push' main",
    "git rebase --exec='rm -rf tests' main",
    "git rebase --ex 'git push' main",
    "git rebase -ix 'git push' main",
    "git filter-branch --tree-filter 'rm -rf tests' HEAD",
    "git filter-branch --msg-filter 'git push' HEAD",
    "git difftool -y -x 'rm -rf tests'",
    "git difftool --extcmd='git push'",
    "git grep -O'rm -rf tests' x",
    "git grep --open-files-in-pager='git push' x",
    "git fetch --upload-pack='rm -rf tests' origin",
    "git clone -u 'git push' . copy",
    "git archive --remote=. --exec='rm -rf tests' HEAD",
    "git submodule foreach 'rm -rf tests'",
    "git submodule --quiet foreach --recursive git push",
    "git bisect run sh -c 'git push'",
    "git -C . bisect run 'rm -rf tests'",
    # scripts from standard input or a process substitution
    "sh -s < script",
    "bash /dev/fd/0 <<< 'git push'",
    "bash /proc/self/fd/0 <<< 'git push'",
    "source <(echo git push)",
    ". <(echo rm -rf tests)",
    "bash <(echo git push)",
    "cat cmds | bash",
    "bash <<< 'git push'",
    # names built by expansions, braces, patterns
    "{git,push}",
    "$'\\x67it' push",
    "g${x}it push",
    "$(echo git) push",
    "`echo git` push",
    "/usr/bin/g?t push",
    'eval "$(echo git push)"',
    # subscripts bash evaluates, callbacks, traps
    "let 'a[$(git push)]=1'",
    "declare -i 'a[$(rm -rf tests)]=1'",
    "test -v 'a[$(git push)]'",
    "printf -v 'b[`git push`]' x",
    "unset 'a[$(git push)]'",
    "readarray -C 'rm -rf tests' -c 1 a < f",
    "trap 'git push' DEBUG",
    "trap -- 'git push' ERR",
    "bash -c \"trap -- 'git push' EXIT\"",
    "hash -p /usr/bin/git g; g push",
    "coproc git push",
    "(( a[$(git push)] ))",
    # paths: lexical, absolute, chains of links, hard links
    ("write_file", "tests//test_a.py"),
    ("write_file", "sub/../tests/new.py"),
    ("write_file", f"{WS}/./tests/test_a.py"),
    ("write_file", f"{WS}/sub/../tests/test_a.py"),
    ("write_file", f"/{WS}/tests/test_a.py"),
    ("write_file", "chain/test_a.py"),
    ("edit_file", "alias.py"),
    ("edit_file", "hard.py"),
    ("write_file", "sub/deep_hard.py"),
    ("write_file", "lnk/new_file.py"),
    ("write_file", "lnk/sub/new.py"),
]

PLAIN = [
    "git status",
    "pytest -q",
    "echo hi",
    "ls -la",
    "git config --get user.name",
    "git config user.name",
    "PYTHONPATH=src pytest",
    "trap -p",
    "git log --oneline -3",
    "git rebase -i main",
    "git rebase --continue",
    "git clean -fdx",
    "git cherry-pick -x abc123",
    "git fetch -u origin",
    "git bisect run pytest -x",
    "git submodule update --init",
    "echo {a,b}",
    "sh script.sh",
    ("write_file", "src/a.py"),
    ("write_file", f"{WS}/src/a.py"),
    ("edit_file", "notes.md"),
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """tests/test_a.py, reached by a folder link (lnk), a chain (chain -> b -> tests), a file
    link (alias.py) and hard links (hard.py, sub/deep_hard.py)."""
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "sub").mkdir()
    (ws / "src").mkdir()
    (ws / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    (ws / "lnk").symlink_to("tests")
    (ws / "b").symlink_to("tests")
    (ws / "chain").symlink_to("b")
    (ws / "alias.py").symlink_to("tests/test_a.py")
    os.link(ws / "tests" / "test_a.py", ws / "hard.py")
    os.link(ws / "tests" / "test_a.py", ws / "sub" / "deep_hard.py")
    return ws


def _decide(rules: Permissions, entry: str | tuple[str, str], ws: Path) -> str:
    if isinstance(entry, tuple):
        tool, path = entry
        arguments = {"path": path.replace(WS, str(ws)), "content": "x", "old": "a", "new": "b"}
        return rules.decide(tool, arguments, workspace=ws).verdict
    return rules.decide("run_shell", {"command": entry}, workspace=ws).verdict


@pytest.mark.parametrize("entry", FROM_THE_ISSUE + OUR_OWN)
def test_every_spelling_is_denied_or_asked_never_allowed(
    entry: str | tuple[str, str], workspace: Path
) -> None:
    assert _decide(RULES, entry, workspace) == "deny"
    asking = RULES.model_copy(update={"unreadable": "ask"})
    assert _decide(asking, entry, workspace) in ("deny", "ask")


@pytest.mark.parametrize("entry", PLAIN)
def test_the_plain_commands_and_paths_are_still_allowed(
    entry: str | tuple[str, str], workspace: Path
) -> None:
    assert _decide(RULES, entry, workspace) == "allow"


def test_the_corpus_counts() -> None:
    assert len(FROM_THE_ISSUE) == 42
    assert len(OUR_OWN) >= 60
    everything = FROM_THE_ISSUE + OUR_OWN
    assert len(set(everything)) == len(everything)


def test_a_workspace_too_large_to_search_for_hard_links_fails_closed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.tools.permissions as permissions

    monkeypatch.setattr(permissions, "MAX_LINK_SEARCH", 3)
    decision = RULES.decide("write_file", {"path": "hard.py"}, workspace=workspace)
    assert (decision.verdict, decision.source) == ("deny", "unreadable")
    assert "hard links" in decision.reason
    plain = RULES.decide("write_file", {"path": "src/a.py"}, workspace=workspace)
    assert plain.verdict == "allow"  # a file of one name needs no search
    (workspace / "src" / "a.py").write_text("x = 1\n")
    existing = RULES.decide("write_file", {"path": "src/a.py"}, workspace=workspace)
    assert (existing.verdict, existing.source) == ("allow", "default")


def test_a_file_with_one_other_name_is_found_with_the_search_bound_exactly_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.tools.permissions as permissions

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    os.link(tmp_path / "tests" / "test_a.py", tmp_path / "two.py")  # three entries in all
    monkeypatch.setattr(permissions, "MAX_LINK_SEARCH", 3)
    decision = RULES.decide("write_file", {"path": "two.py"}, workspace=tmp_path)
    assert (decision.verdict, decision.source, decision.rule) == (
        "deny",
        "rule",
        "write_file(tests/*)",
    )
    monkeypatch.setattr(permissions, "MAX_LINK_SEARCH", 2)
    past = RULES.decide("write_file", {"path": "two.py"}, workspace=tmp_path)
    assert (past.verdict, past.source) == ("deny", "unreadable")
    monkeypatch.setattr(permissions, "MAX_LINK_SEARCH", 3)
    (tmp_path / ".git").mkdir()  # left out: neither searched nor counted
    os.link(tmp_path / "tests" / "test_a.py", tmp_path / ".git" / "object")
    assert permissions.path_subjects("two.py", tmp_path) == ["two.py", "tests/test_a.py"]


def test_a_path_through_a_linked_workspace_is_judged_by_the_name_it_reaches(tmp_path: Path) -> None:
    from harness.tools.permissions import path_subjects

    real = tmp_path / "b" / "real"
    (real / "tests").mkdir(parents=True)
    (tmp_path / "a").mkdir()
    link = tmp_path / "a" / "link"
    link.symlink_to(real)
    assert "tests/x.py" in path_subjects("../link/tests/x.py", link)
    decision = RULES.decide("write_file", {"path": "../link/tests/x.py"}, workspace=link)
    assert (decision.verdict, decision.rule) == ("deny", "write_file(tests/*)")
