"""Permission rules: a denied command stays denied however it is spelt, and the rules fail closed."""

from __future__ import annotations

import pytest

from harness.core.errors import ConfigError
from harness.spec.loop_spec import LoopSpec
from harness.tools.permissions import Permissions, matches
from harness.tools.shell_commands import Unreadable, commands

RULES = Permissions(
    allow=["run_shell(pytest*)", "run_shell(git status*)"],
    ask=["run_shell(pip install*)"],
    deny=["run_shell(git push*)"],
)

SMUGGLED = [
    "git push",
    "git push origin main --force",
    "/usr/bin/git push",
    "env git push",
    "env X=1 Y=2 git push",
    "X=1 git push",
    "pytest -q && git push",
    "pytest -q; git push",
    "pytest -q || git push",
    "git status | git push",
    "git push &",
    "echo $(git push)",
    "echo `git push`",
    'echo "$(echo ok; git push)"',
    "cat <(git push)",
    "(git push)",
    "{ git push; }",
    "if true; then git push; fi",
    "for i in 1; do git push; done",
    "f() { git push; }; f",
    "sh -c 'git push'",
    'bash -c "git push"',
    "bash -lc 'echo x; git push'",
    "bash -o pipefail -c 'git push'",
    "sh -c \"sh -c 'git push'\"",
    'g"i"t pu""sh',
    "'git' \"push\"",
    "\\git pu\\sh",
    "command git push",
    "exec git push",
    "nohup git push",
    "timeout 10 git push",
    "nice -n 5 git push",
    "sudo -u root git push",
    "find . -maxdepth 0 -exec git push \\;",
    'eval "git push"',
    "git -C . push",
    "git --no-pager push origin",
    "git push 2>/dev/null >&2",
    "echo hi > $(git push)",
    "x=$(git push)",
    "cat <<< $(git push)",
    "git pu$@sh",
    "git $'push'",
    "git p*",
    "git pu{s,}h",
    'trap "git push" EXIT',
    "watch -n 1 git push",
    "su -c 'git push' root",
    "builtin eval 'git push'",
    "! git push",
    "true && \\\ngit push",
]

UNREADABLE = [
    "env -i PATH=/usr/bin /usr/bin/git push",  # PATH set on the line
    "xargs git push < /dev/null",  # xargs takes words from its input
    "echo | xargs -I{} git push",
    "$GIT push",
    "${G}it push",
    "echo git push | sh",
    "sh <<EOF\ngit push\nEOF",
    "alias p='git push'; p",
    "case x in x) git push;; esac",
    "echo $((1+1)); git push",
    "env -S 'git push'",
    "g* push",
    'echo "unclosed',
    "cat <<EOF\n$(git push)\nEOF",
    "cat <<EOF\n`git push`\nEOF",
    "echo ${x:-$(git push)}",
    "git${IFS}push",
    "$(echo git) push",
    "git -c alias.p=push p",
]


@pytest.mark.parametrize("line", SMUGGLED)
def test_every_spelling_of_a_denied_command_is_denied_by_its_rule(line: str) -> None:
    decision = RULES.decide("run_shell", {"command": line})
    assert decision.verdict == "deny"
    assert decision.rule == "run_shell(git push*)"
    assert decision.subject.startswith("git")


@pytest.mark.parametrize("line", UNREADABLE)
def test_a_line_that_cannot_be_read_fails_closed(line: str) -> None:
    decision = RULES.decide("run_shell", {"command": line})
    assert (decision.verdict, decision.source, decision.rule) == ("deny", "unreadable", None)
    assert decision.reason
    asking = RULES.model_copy(update={"unreadable": "ask"})
    assert asking.decide("run_shell", {"command": line}).verdict == "ask"


def test_there_are_thirty_and_more_spellings() -> None:
    assert len(SMUGGLED) + len(UNREADABLE) >= 30
    assert len(set(SMUGGLED)) == len(SMUGGLED)


@pytest.mark.parametrize(
    ("line", "verdict"),
    [
        ("pytest -q", "allow"),
        ("git status", "allow"),
        ("echo 'git push'", "allow"),  # a word that says it is not a command that runs it
        ("git pull", "allow"),
        ("pip install requests", "ask"),
        ("pytest && pip install x", "ask"),
        ("pip install x; git push", "deny"),
        ("ls", "allow"),
    ],
)
def test_allowed_and_asked_commands_are_not_over_denied(line: str, verdict: str) -> None:
    assert RULES.decide("run_shell", {"command": line}).verdict == verdict


def test_the_default_and_a_bare_tool_rule_cover_what_no_command_rule_names() -> None:
    strict = Permissions(allow=["run_shell(pytest*)"], default="ask")
    assert strict.decide("run_shell", {"command": "pytest"}).verdict == "allow"
    assert strict.decide("run_shell", {"command": "pytest && ls"}).verdict == "ask"
    assert strict.decide("read_file", {"path": "a"}).verdict == "ask"
    shell_ok = Permissions(allow=["run_shell"], deny=["run_shell(rm *)"], default="deny")
    assert shell_ok.decide("run_shell", {"command": "ls -la"}).verdict == "allow"
    assert shell_ok.decide("run_shell", {"command": "ls; rm -rf x"}).verdict == "deny"
    no_shell = Permissions(deny=["run_shell"], allow=["run_shell(pytest*)"])
    assert no_shell.decide("run_shell", {"command": "pytest"}).verdict == "deny"


def test_path_rules_match_the_normalised_path_and_tool_rules_match_mcp_tools() -> None:
    rules = Permissions(
        deny=["write_file(tests/*)", "edit_file(tests/*)", "mcp__github__*"],
        ask=["mcp__files__delete"],
    )
    for path in ("tests/test_a.py", "./tests/test_a.py", "src/../tests/deep/x.py", "tests\\x.py"):
        assert rules.decide("write_file", {"path": path}).verdict == "deny", path
    assert rules.decide("write_file", {"path": "src/tests/x.py"}).verdict == "allow"
    assert rules.decide("read_file", {"path": "tests/test_a.py"}).verdict == "allow"
    assert rules.decide("mcp__github__create_issue", {"title": "x"}).rule == "mcp__github__*"
    assert rules.decide("mcp__files__delete", {}).verdict == "ask"
    assert rules.decide("mcp__files__read", {}).verdict == "allow"


def test_without_command_rules_no_line_is_parsed() -> None:
    rules = Permissions(deny=["write_file(tests/*)"])
    assert not rules.reads_commands
    assert rules.decide("run_shell", {"command": "$X push"}).verdict == "allow"


def test_a_malformed_rule_is_a_configuration_error_naming_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    toml = tmp_path / "loop.toml"
    toml.write_text('goal = "g"\n[permissions]\ndeny = ["run_shell()"]\n')
    with pytest.raises(ConfigError, match=r"permissions.deny.*rule 'run_shell\(\)'"):
        LoopSpec.from_toml(toml)
    toml.write_text('goal = "g"\n[permissions]\ndeny = ["run_shell(git push*)"]\nallw = []\n')
    with pytest.raises(ConfigError, match="allw"):
        LoopSpec.from_toml(toml)


def test_commands_reads_wrappers_and_nested_shells() -> None:
    assert commands("env X=1 /usr/bin/git push") == [
        ("env", "X=1", "/usr/bin/git", "push"),
        ("git", "push"),
    ]
    assert commands("sh script.sh") == [("sh", "script.sh")]
    assert commands("nice -n 5 make") == [("nice", "-n", "5", "make"), ("make",)]
    with pytest.raises(Unreadable, match="option '-Z' is not known"):
        commands("timeout -Z 5 git push")
    deep = "git push"
    for _ in range(10):
        deep = f"sh -c {deep!r}".replace("'", '"') if '"' not in deep else f"eval {deep!r}"
    with pytest.raises(Unreadable):
        commands(deep)


def test_a_tool_that_takes_a_command_argument_is_judged_by_its_own_name() -> None:
    rules = Permissions(deny=["mcp__x__*"], allow=["run_shell"])
    decision = rules.decide("mcp__x__exec", {"command": "ls"})
    assert (decision.verdict, decision.rule, decision.subject) == (
        "deny",
        "mcp__x__*",
        "mcp__x__exec",
    )
    shell = Permissions(deny=["run_shell(git push*)"])
    assert shell.decide("run_shell", {"command": 5}).verdict == "allow"  # no line to read
    assert shell.decide("run_shell", {"command": "git push"}).verdict == "deny"


def test_a_command_rule_beats_a_bare_shell_rule_for_the_commands_it_names() -> None:
    rules = Permissions(ask=["run_shell"], allow=["run_shell(pytest*)"])
    decision = rules.decide("run_shell", {"command": "pytest -q"})
    assert (decision.verdict, decision.rule, decision.subject) == (
        "allow",
        "run_shell(pytest*)",
        "pytest -q",
    )
    other = rules.decide("run_shell", {"command": "pytest -q && ls"})
    assert (other.verdict, other.rule, other.subject) == ("ask", "run_shell", "pytest -q && ls")


def test_the_settings_defaults_and_the_ask_timeout_bounds() -> None:
    rules = Permissions()
    assert (rules.default, rules.unreadable, rules.unattended) == ("allow", "deny", "deny")
    assert rules.attended is True
    assert rules.ask_timeout == 300
    assert Permissions(ask_timeout=86_400).ask_timeout == 86_400
    assert Permissions(ask_timeout=0.5).ask_timeout == 0.5
    for wrong in (0, -1, 86_400.5, float("inf")):
        with pytest.raises(ValueError, match="ask_timeout"):
            Permissions(ask_timeout=wrong)


def test_a_model_of_the_rules_cannot_be_changed_once_read() -> None:
    rules = Permissions(deny=["run_shell(git push*)"])
    with pytest.raises(ValueError, match="frozen"):
        rules.default = "deny"  # type: ignore[misc]
    assert rules.default == "allow"


def test_guarded_paths_are_the_literal_folders_of_deny_and_ask_rules_on_writes() -> None:
    rules = Permissions(
        deny=[
            "write_file(tests/*)",
            "edit_file(src/core/*.py)",
            "write_file(*.lock)",
            "write_file",  # the tool itself: no path to guard
            "run_shell(rm *)",
            "read_file(secret/*)",
            "*_file(cfg/te?t)",
            "write_file(.)",
            "write_file(../out/*)",
        ],
        ask=["edit_file(docs/api/x.md)", "write_file(./tests/*)", "write_file(./*)"],
        allow=["write_file(build/*)"],
    )
    assert rules.guarded() == ("tests", "src/core", "cfg", "docs/api/x.md")
    assert rules.guarded(("read_file",)) == ("secret", "cfg")
    assert Permissions(allow=["write_file(build/*)"]).guarded() == ()


def test_with_a_default_of_deny_the_allowed_commands_still_run() -> None:
    rules = Permissions(allow=["run_shell(pytest*)", "run_shell(git status*)"], default="deny")
    decision = rules.decide("run_shell", {"command": "pytest -q"})
    assert (decision.verdict, decision.rule) == ("allow", "run_shell(pytest*)")
    assert rules.decide("run_shell", {"command": "git status && pytest"}).verdict == "allow"
    other = rules.decide("run_shell", {"command": "pytest -q && ls"})
    assert (other.verdict, other.source, other.subject) == ("deny", "default", "pytest -q && ls")
    unread = rules.decide("run_shell", {"command": "$X push"})
    assert (unread.verdict, unread.source) == ("deny", "unreadable")
    asking = rules.model_copy(update={"unreadable": "ask"})  # never weaker than the default
    assert asking.decide("run_shell", {"command": "$X push"}).verdict == "deny"
    assert asking.decide("run_shell", {"command": "pytest"}).verdict == "allow"
    shell_asked = Permissions(ask=["run_shell"], allow=["run_shell(pytest*)"])
    assert shell_asked.decide("run_shell", {"command": "$X"}).verdict == "deny"
    lenient = shell_asked.model_copy(update={"unreadable": "ask"})
    assert lenient.decide("run_shell", {"command": "$X"}).source == "unreadable"


def test_only_a_command_rule_or_a_strict_default_makes_the_lines_be_read() -> None:
    assert Permissions(allow=["run_shell"], deny=["write_file(tests/*)"]).reads_commands is False
    assert Permissions(deny=["run_*(rm *)"]).reads_commands is True
    assert Permissions(default="ask").reads_commands is True
    assert Permissions(default="deny").reads_commands is True


def test_a_decision_cannot_be_changed_and_matching_answers_a_bool() -> None:
    decision = RULES.decide("run_shell", {"command": "git push"})
    with pytest.raises(AttributeError):
        decision.verdict = "allow"  # type: ignore[misc]
    assert matches("git push*", ("ls",), loose=True) is False
    assert matches("git push*", ("git", "status"), loose=False) is False
    assert matches("git push*", ("git", "-C", ".", "push"), loose=True) is True


def test_a_deny_pattern_s_words_are_found_in_order_among_the_command_s_words() -> None:
    rules = Permissions(deny=["run_shell(git push origin)"])
    for line in ("git push -f origin", "git -C . push --force origin", "git push origin"):
        decision = rules.decide("run_shell", {"command": line})
        assert (decision.verdict, decision.rule) == ("deny", "run_shell(git push origin)"), line
    for line in ("git push", "git origin push", "git status origin", "git pushed origin"):
        assert rules.decide("run_shell", {"command": line}).verdict == "allow", line
    echo = Permissions(deny=["run_shell(echo echo*)"])
    assert echo.decide("run_shell", {"command": "echo hi"}).verdict == "allow"  # not the program
    assert echo.decide("run_shell", {"command": "echo x echo"}).verdict == "deny"
    allowed = Permissions(allow=["run_shell(git status*)"], default="deny")
    assert allowed.decide("run_shell", {"command": "git status -s"}).verdict == "allow"
    assert allowed.decide("run_shell", {"command": "git -C . status"}).verdict == "deny"  # exact
    assert allowed.decide("run_shell", {"command": "git st$x"}).verdict == "deny"
