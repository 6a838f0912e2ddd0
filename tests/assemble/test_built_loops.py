"""Every shipped loop.toml (the examples and the ``init`` templates) builds the loop it built
before the one specification existed: ``built_loops.json`` holds those loops' settings."""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.assemble.build import build_loop, mcp_servers
from harness.cli.templates import LOOP_TOML
from harness.core.sink import NULL_SINK
from harness.outer.loop import OuterLoop
from harness.outer.options import ArtifactFile
from harness.outer.settings import Settings
from harness.spec import LoopSpec

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = json.loads((Path(__file__).parent / "built_loops.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _loop_toml_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox's variables are loop.toml's alone, not those the suite adds for speed."""
    monkeypatch.delenv("HARNESS_SANDBOX_ENV", raising=False)


def _relative(path: Path | str, root: Path) -> str:
    """``path`` from ``root``, the way it was written (links not followed)."""
    return os.path.relpath(path, root)


def _gate(gate: Any) -> dict[str, Any]:
    found = {"class": type(gate).__name__, "name": gate.name}
    found.update({a: getattr(gate, a) for a in ("args", "cmd", "timeout") if hasattr(gate, a)})
    return found


def _artifact(artifact: object) -> str:
    return f"file:{artifact.path}" if isinstance(artifact, ArtifactFile) else str(artifact)


def describe(loop: OuterLoop, root: Path) -> dict[str, Any]:
    """What a built loop will do, as plain data (paths relative to ``root``)."""
    settings = options = loop.settings  # the options given, completed by the loop
    agent, critic = settings.agent, settings.critic
    compaction, sandbox, hooks = agent.compaction, agent.sandbox, settings.hooks_sandbox()
    assert sandbox is not None
    return {
        "goal": settings.goal,
        "name": options.name,
        "model": agent.model.name,
        "critic": None if critic is None else {
            "model": critic.model.name, "threshold": critic.threshold,
            "criteria": critic.criteria, "criteria_given": critic.criteria_given,
        },
        "gates": [_gate(g) for g in settings.gates],
        "human": settings.human is not None,
        "skill": None if settings.skill is None else _relative(settings.skill.source or "", root),
        "progress": None if loop.progress is None else _relative(loop.progress.path or "", root),
        "max_iterations": settings.max_iterations,
        "budget": dict(settings.budget.__dict__),
        "workspace": _relative(settings.workspace, root),
        "isolation": settings.isolation,
        "on_escalate": settings.on_escalate,
        "on_round": options.on_round,
        "protect": list(settings.protect),
        "patience": options.patience,
        "rollback": options.rollback,
        "merge": options.merge,
        "critic_artifact": _artifact(options.critic_artifact),
        "checklist": list(options.checklist),
        "earlier": options.earlier,
        "mcp": [server.name for server in options.mcp],
        "agent": {
            "max_steps": agent.max_steps, "compaction": type(compaction).__name__,
            "threshold": getattr(compaction, "threshold", None),
            "window": getattr(compaction, "context_window", None),
            "system_prompt": agent.system_prompt, "max_tokens": agent.max_tokens,
            "shell_timeout": agent.shell_timeout, "tools": sorted(t.name for t in agent.toolbox),
        },
        "sandbox": {
            "backend": sandbox.backend, "network": sandbox.network,
            "env": list(sandbox.env_names),
            "readonly": [_relative(p, root) for p in sandbox.readonly],
            "limits": sandbox.limits.model_dump(),
        },
        "hook_sandbox": {"network": hooks.network, "env": list(hooks.env_names)},
    }  # fmt: skip


@pytest.mark.parametrize("example", ["bugfix", "content", "research", "web-research"])
def test_each_example_builds_the_loop_it_built_before(
    example: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_MODEL", raising=False)
    monkeypatch.delenv("HARNESS_CRITIC_MODEL", raising=False)
    spec = LoopSpec.from_toml(ROOT / "examples" / example)
    loop = build_loop(spec, events=NULL_SINK, mcp=mcp_servers(spec))
    assert describe(loop, spec.root) == EXPECTED[f"examples/{example}"]


@pytest.mark.parametrize("kind", sorted(LOOP_TOML))
def test_each_init_template_builds_the_loop_it_built_before(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loop.toml").write_text(LOOP_TOML[kind], encoding="utf-8")
    skill = ROOT / "harness" / "cli" / "skills" / kind / "SKILL.md"
    (tmp_path / "skills" / kind).mkdir(parents=True)
    (tmp_path / "skills" / kind / "SKILL.md").write_text(skill.read_text(encoding="utf-8"))
    (tmp_path / "none.json").write_text("[]", encoding="utf-8")
    monkeypatch.setenv("HARNESS_MODEL", f"scripted:{tmp_path / 'none.json'}")
    monkeypatch.delenv("HARNESS_CRITIC_MODEL", raising=False)
    spec = LoopSpec.from_toml(tmp_path)
    loop = build_loop(spec, events=NULL_SINK, mcp=mcp_servers(spec))
    assert describe(loop, spec.root) == EXPECTED[f"init {kind}"]


def test_a_changed_setting_shows_in_the_comparison() -> None:
    spec = LoopSpec.from_toml(ROOT / "examples" / "bugfix").with_changes(patience=4)
    loop = build_loop(spec, events=NULL_SINK)
    found = describe(loop, spec.root)
    assert found["patience"] == 4
    assert found != EXPECTED["examples/bugfix"]
    assert {k for k in found if found[k] != EXPECTED["examples/bugfix"][k]} == {"patience"}


def test_the_outer_loop_takes_its_settings_fields_as_keywords() -> None:
    parameters = list(inspect.signature(OuterLoop).parameters)
    assert parameters == ["goal", "agent", "progress", "options", "settings"]
    public = ["goal", "agent", "gates", "critic", "skill", "max_iterations", "budget",
              "workspace", "isolation", "on_escalate", "name", "patience", "earlier", "mcp"]  # fmt: skip
    assert set(public) <= set(Settings.model_fields)
