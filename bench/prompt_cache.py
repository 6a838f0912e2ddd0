"""How much of a long session's prompt a provider's cache serves, and what that saves.

A local Anthropic-compatible server (tests/anthropic_server.py) simulates Anthropic's prompt
cache: a request reads from the cache the longest prefix (at a message boundary) that an
earlier request marked with a ``cache_control`` breakpoint; the rest of its own marked prefix is
written to the cache (billed at the cache-write price); tokens are estimated offline. The harness's Agent, over
``LiteLLMModel("anthropic/claude-sonnet-4-5")``, plays a ``--steps`` session (``read_file``
calls, then an answer) once with prompt caching and once without; the share of prompt tokens
served from the cache and both costs, at litellm's prices for the model, are printed.

    python bench/prompt_cache.py [--steps 50]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.agent.agent import Agent, AgentStop  # noqa: E402
from harness.core.usage import Usage  # noqa: E402
from harness.models.budget import Meter, MeteredModel  # noqa: E402
from harness.models.litellm_model import LiteLLMModel  # noqa: E402
from harness.models.tokens import count_text  # noqa: E402
from tests.anthropic_server import AnthropicServer  # noqa: E402
from tests.openai_server import Text, ToolCalls  # noqa: E402

MODEL = "anthropic/claude-sonnet-4-5"


class CachingServer(AnthropicServer):
    """Reports usage as Anthropic's prompt cache would for each request's breakpoints."""

    def __init__(self) -> None:
        super().__init__(deadline=600)
        self.cached: set[str] = set()

    def render(self, body: dict[str, Any], behaviour: Text | ToolCalls) -> dict[str, Any]:
        reply = super().render(body, behaviour)
        boundaries = [_strip_marks(_prefix(body, n)) for n in range(len(body["messages"]) + 1)]
        total = _tokens(boundaries[-1])
        # Anthropic looks back from each breakpoint for the longest prefix cached before.
        read = max((_tokens(p) for p in boundaries if p in self.cached), default=0)
        marked = _marked_prefixes(body)
        written = max(max((_tokens(p) for p in marked), default=0) - read, 0)
        self.cached.update(marked)
        reply["usage"] = {
            "input_tokens": total - read - written,
            "output_tokens": behaviour.completion_tokens,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }
        return reply


def _prefix(body: dict[str, Any], messages: int) -> str:
    """The request up to (and including) ``messages`` messages, in Anthropic's order."""
    head = {"tools": body.get("tools"), "system": body.get("system")}
    return json.dumps([head, body["messages"][:messages]], sort_keys=True)


def _marked_prefixes(body: dict[str, Any]) -> list[str]:
    """Every prefix ending at a cache breakpoint (the system prompt, or a message block)."""
    found = []
    if any("cache_control" in block for block in body.get("system") or []):
        found.append(_prefix(body, 0))
    for index, message in enumerate(body["messages"]):
        content = message.get("content")
        if isinstance(content, list) and any("cache_control" in block for block in content):
            found.append(_prefix(body, index + 1))
    return [_strip_marks(text) for text in found]


def _strip_marks(text: str) -> str:
    """A prefix as the cache keys it: the breakpoints themselves are not content."""
    return text.replace(', "cache_control": {"type": "ephemeral"}', "").replace(
        '"cache_control": {"type": "ephemeral"}, ', ""
    )


def _tokens(text: str) -> int:
    return count_text(text, "claude")


def session(steps: int, workspace: Path, *, caching: bool) -> Usage:
    with CachingServer() as server:
        for step in range(steps):
            arguments = json.dumps(
                {"path": "notes.txt", "start_line": step + 1, "end_line": step + 1}
            )
            server.queue(
                ToolCalls(((f"toolu_{step}", "read_file", arguments),), completion_tokens=40)
            )
        server.queue(Text("All lines read.", completion_tokens=20))
        model = LiteLLMModel(
            MODEL, api_base=server.api_base, api_key="sk-bench", prompt_caching=caching
        )
        meter = Meter()
        run = Agent(MeteredModel(model, meter), max_steps=steps + 1).run(
            "Read notes.txt one line per call and report what it says.", workspace
        )
        assert run.stop_reason is AgentStop.ANSWERED, run.stop_message
        return meter.usage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        lines = "".join(
            f"line {i}: " + "lorem ipsum dolor sit amet " * 8 + "\n"
            for i in range(1, args.steps + 1)
        )
        (workspace / "notes.txt").write_text(lines)
        cached = session(args.steps, workspace, caching=True)
        plain = session(args.steps, workspace, caching=False)
    share = cached.cached_tokens / cached.prompt_tokens
    print(f"{args.steps}-step session on {MODEL} (litellm's prices), simulated prompt cache")
    print(f"  prompt tokens          {cached.prompt_tokens:>9,}   served from cache {share:6.1%}")
    print(f"  cost with caching      ${cached.cost_usd:>8.4f}")
    print(
        f"  cost without caching   ${plain.cost_usd:>8.4f}   ({plain.prompt_tokens:,} prompt tokens)"
    )
    print(f"  saving                 {1 - cached.cost_usd / plain.cost_usd:6.1%}")


if __name__ == "__main__":
    main()
