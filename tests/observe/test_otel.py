"""OpenTelemetry export: GenAI semantic-convention spans, and a clear error without the extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.observe.otel import gen_ai_system
from tests.event_fixtures import CALLS, emit_sample_run

sdk = pytest.importorskip(
    "opentelemetry.sdk.trace",
    reason="opentelemetry-sdk is not installed (pip install 'harness[otel]')",
)


def test_run_rounds_model_and_tool_calls_become_spans() -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    from harness.observe.otel import OtelSink

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sample = emit_sample_run(OtelSink(tracer_provider=provider), run_id="r-otel")
    spans = exporter.get_finished_spans()

    by_name = {span.name: span for span in spans}
    run = by_name["harness run"]
    assert run.parent is None
    assert run.attributes["harness.stop_reason"] == "MAX_ITERATIONS"
    rounds = [span for span in spans if span.name.startswith("round ")]
    assert [span.name for span in rounds] == ["round 1", "round 2", "round 3"]
    assert all(span.parent.span_id == run.context.span_id for span in rounds)  # type: ignore[union-attr]
    assert [e.name for e in rounds[0].events] == [
        "budget_check",
        "session_start",
        "session_end",
        "checks_start",
        "gate_report",
        "gate_report",
    ]
    assert "compaction" in [e.name for e in rounds[1].events]

    chats = [span for span in spans if span.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == sample.usage.calls
    assert (
        sum(s.attributes["gen_ai.usage.input_tokens"] for s in chats) == sample.usage.prompt_tokens
    )
    assert (
        sum(s.attributes["gen_ai.usage.output_tokens"] for s in chats)
        == sample.usage.completion_tokens
    )
    critic = next(s for s in chats if s.attributes["harness.role"] == "critic")
    assert critic.name == f"chat {CALLS['critic'][0]}"
    assert critic.attributes["gen_ai.system"] == "anthropic"
    assert critic.attributes["gen_ai.request.model"] == "claude-3-5-haiku"
    assert critic.attributes["harness.run_id"] == "r-otel"
    assert (critic.end_time - critic.start_time) / 1e9 == pytest.approx(1.8)

    tools = [span for span in spans if span.name.startswith("execute_tool ")]
    assert len(tools) == 9
    assert tools[0].attributes["gen_ai.tool.name"] == "read_file"
    failed = [span for span in tools if span.status.status_code == StatusCode.ERROR]
    assert len(failed) == 1
    assert failed[0].parent.span_id == rounds[0].context.span_id  # type: ignore[union-attr]


def test_gen_ai_system_from_model_strings() -> None:
    assert gen_ai_system("openai/gpt-4o") == "openai"
    assert gen_ai_system("ollama/llama3") == "ollama"
    assert gen_ai_system("gpt-4o-mini") == "openai"
    assert gen_ai_system("claude-3-5-sonnet") == "anthropic"
    assert gen_ai_system("scripted:demo.jsonl") == "scripted"
    assert gen_ai_system("some-local-model") == "litellm"


def test_missing_opentelemetry_is_a_config_error_naming_the_extra() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from harness.observe.otel import OtelSink\n"
        "from harness.core.errors import ConfigError\n"
        "try:\n    OtelSink()\n"
        "except Exception as err:\n    print(isinstance(err, ConfigError), err)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).parents[2])  # fmt: skip
    assert done.stdout.startswith("True otel:")
    assert "pip install -e '.[otel]'" in done.stdout  # from a clone, as the README installs
    assert "pip install 'harness[otel]'" in done.stdout


def test_harness_run_otel_prints_genai_spans_without_an_otlp_exporter(tmp_path: Path) -> None:
    import json as json_module
    import textwrap

    from tests.cli.test_cli import harness

    (tmp_path / "script.json").write_text(json_module.dumps([
        {"name": "write_file", "arguments": {"path": "out.txt", "content": "yes"}}, "done"]))  # fmt: skip
    (tmp_path / "loop.toml").write_text(
        textwrap.dedent("""\
        goal = "out.txt says yes"
        model = "scripted:script.json"
        isolation = "none"
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "grep -q yes out.txt"
        """)
    )
    result = harness("run", "--quiet", "--otel", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert '"name": "chat scripted:script.json"' in result.stderr
    assert '"gen_ai.usage.input_tokens"' in result.stderr
    assert '"name": "execute_tool write_file"' in result.stderr
