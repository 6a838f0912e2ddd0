"""loop.toml ``[web]``: the agent gets fetch_url for the listed domains only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.assemble.build import build_loop
from harness.core.errors import ConfigError
from harness.core.sink import NullSink
from harness.models.scripted import ScriptedModel
from harness.spec import LoopSpec
from tests.cli.test_cli import write_loop
from tests.research.test_web import site  # noqa: F401 - the fixture

WEB_LOOP = """\
name = "reader"
goal = "note what the page says about tides"
isolation = "none"
model = "scripted:author.json"
max_iterations = 1
{web}
[critic]
enabled = false

[[gates]]
type = "command"
cmd = "test -s notes.md"
"""


def test_the_agent_reads_an_allowed_page_and_is_refused_another(
    tmp_path: Path,
    site: str,  # noqa: F811
) -> None:
    fetches = [
        {"name": "fetch_url", "arguments": {"url": f"{site}/article"}},
        {"name": "fetch_url", "arguments": {"url": "http://evil.example/"}},
    ]
    write = {"name": "write_file", "arguments": {"path": "notes.md", "content": "moon"}}
    (tmp_path / "author.json").write_text(
        json.dumps([{"content": None, "tool_calls": fetches}, write, "done"])
    )
    web = '[web]\nallow_domains = ["127.0.0.1"]\nmax_bytes = 50_000\ntimeout = 5'
    write_loop(tmp_path, WEB_LOOP.format(web=web))
    config = LoopSpec.from_toml(tmp_path)
    loop = build_loop(config, events=NullSink())
    assert loop.run().passed
    model = loop.settings.agent.model
    assert isinstance(model, ScriptedModel)
    page, refused = (str(m["content"]) for m in model.calls[1].messages[-2:])
    assert "# How tides work" in page
    assert "evil.example is not an allowed domain" in refused


def test_without_a_web_section_there_is_no_fetch_tool(tmp_path: Path) -> None:
    (tmp_path / "author.json").write_text(json.dumps(["done"]))
    write_loop(tmp_path, WEB_LOOP.format(web=""))
    config = LoopSpec.from_toml(tmp_path)
    loop = build_loop(config, events=NullSink())
    assert "fetch_url" not in loop.settings.agent.toolbox


@pytest.mark.parametrize(
    ("web", "message"),
    [
        ("[web]\nallow_domains = []", "field 'web.allow_domains'"),
        ('[web]\nallow_domains = ["x.org"]\ntimeout = -1', "field 'web.timeout'"),
        ('[web]\nallow_domains = ["https://x.org"]', "web.allow_domains: 'https://x.org'"),
        (  # two bad fields: the first is named
            '[web]\nallow_domains = ["x.org/p"]\nreplay = "nowhere"',
            "^web.allow_domains: 'x.org/p' is not a host name",
        ),
        (
            '[web]\nallow_domains = ["x.org"]\nreplay = "nowhere"',
            "^web.replay: .* is not an archive",
        ),
    ],
)
def test_bad_web_sections_name_the_field(tmp_path: Path, web: str, message: str) -> None:
    (tmp_path / "author.json").write_text(json.dumps(["done"]))
    write_loop(tmp_path, WEB_LOOP.format(web=web))
    with pytest.raises(ConfigError, match=message):
        build_loop(LoopSpec.from_toml(tmp_path), events=NullSink())


def test_web_search_is_offered_only_when_configured_and_needs_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "author.json").write_text(json.dumps(["done"]))
    write_loop(tmp_path, WEB_LOOP.format(web='[web.search]\napi_key_env = "MY_SEARCH_KEY"'))
    monkeypatch.delenv("MY_SEARCH_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"web\.search\.api_key_env: .*MY_SEARCH_KEY is not set"):
        build_loop(LoopSpec.from_toml(tmp_path), events=NullSink())
    monkeypatch.setenv("MY_SEARCH_KEY", "k")
    toolbox = build_loop(LoopSpec.from_toml(tmp_path), events=NullSink()).settings.agent.toolbox
    assert "web_search" in toolbox
    assert "fetch_url" not in toolbox  # no allow_domains: nothing to fetch from


def test_an_empty_web_section_is_refused(tmp_path: Path) -> None:
    write_loop(tmp_path, WEB_LOOP.format(web="[web]\ntimeout = 5"))
    with pytest.raises(ConfigError, match="field 'web': give allow_domains"):
        LoopSpec.from_toml(tmp_path)
