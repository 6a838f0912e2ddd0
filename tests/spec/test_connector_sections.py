"""loop.toml's [github], [[connectors]], [ci] and [[triggers]]: mistakes are named by field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.spec import LoopSpec

HEAD = 'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
GITHUB = '[github]\nrepo = "acme/widgets"\n'


def _load(tmp_path: Path, text: str) -> LoopSpec:
    (tmp_path / "loop.toml").write_text(HEAD + textwrap.dedent(text))
    return LoopSpec.from_toml(tmp_path)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[[connectors]]\ntype = "pull_request"\n', "field 'connectors[0]': pull_request needs [github]"),
        ('[[connectors]]\ntype = "push"\n', "field 'connectors[0]': push needs [github]"),
        ("[ci]\n", "field 'ci': waiting for check runs needs [github]"),
        ('[[triggers]]\ntype = "issues"\n', "field 'triggers[0]': the issues trigger needs [github]"),
        ('[[triggers]]\ntype = "schedule"\ncron = "61 * * * *"\n', "field 'triggers[0].cron': Value error"),
        ('[[triggers]]\ntype = "schedule"\ncron = "* * * * * *"\n', "not a cron schedule of five"),
        ('[[connectors]]\ntype = "webhook"\nurl_env = "not a name"\n', "field 'connectors[0].url_env'"),
        ('[[connectors]]\ntype = "artifact"\nfile = "a.md"\n', "field 'connectors[0]': give folder or branch: neither is given"),
        ('[[connectors]]\ntype = "artifact"\nfile = "a.md"\nfolder = "o"\nbranch = "p"\n', "field 'connectors[0]': give folder or branch: not both"),
        ('[[connectors]]\ntype = "pager"\n', "field 'connectors[0]': Input tag 'pager'"),
        (GITHUB + 'token = "ghp_x"\n', "field 'github.token'"),
        (GITHUB + '[[connectors]]\ntype = "push"\non = ["sometimes"]\n', "field 'connectors[0].on[0]'"),
    ],
)  # fmt: skip
def test_a_mistake_names_its_field(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)
    assert named in str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / "loop.toml"))


def test_the_secrets_connectors_read_are_redacted_whatever_their_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _load(tmp_path, GITHUB + textwrap.dedent("""\
        token_env = "HOST_PASS"
        [[connectors]]
        type = "webhook"
        url_env = "CHAT_URL"
        [[triggers]]
        type = "webhook"
        secret_env = "HOOK_SHARED"
        """))  # fmt: skip
    monkeypatch.setenv("HOST_PASS", "plain-value-one")
    monkeypatch.setenv("CHAT_URL", "http://chat.example/in/plain-value-two")
    monkeypatch.setenv("HOOK_SHARED", "plain-value-three")
    monkeypatch.setenv("OTHER_SETTING", "plain-value-four")
    text = (
        "plain-value-one http://chat.example/in/plain-value-two plain-value-three plain-value-four"
    )
    assert spec.redactor().redact_text(text) == "[REDACTED] [REDACTED] [REDACTED] plain-value-four"
