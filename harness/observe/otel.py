"""OpenTelemetry export of a run's events (the optional ``harness[otel]`` extra; off by default).

Spans follow the GenAI semantic conventions: the run is a root span, each round a child span,
each model call a ``chat {model}`` span and each tool call an ``execute_tool {name}`` span
inside the current round. Gate reports, verdicts, compactions, budget checks, stops and
escalations become span events on the current round (or the run). A model or tool call's
``ts`` is taken as its end; its latency or duration gives its start.

Feed it redacted events: make it (or a :class:`harness.observe.events.Tee` holding it) the ``echo`` of
the run's :class:`harness.observe.events.EventLog`.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.core.errors import MissingExtra
from harness.core.event_schema import (
    EventBase,
    ModelCall,
    RoundEnd,
    RoundStart,
    RunEnd,
    RunStart,
    ToolCallEvent,
    ToolStart,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Span, TracerProvider

_KNOWN_SYSTEMS = {"gpt-": "openai", "o1": "openai", "o3": "openai", "o4": "openai",
                  "claude": "anthropic", "gemini": "gemini", "mistral": "mistral_ai"}  # fmt: skip
_COMMON_FIELDS = {"kind", "v", "ts", "run_id"}


def gen_ai_system(model: str) -> str:
    """The ``gen_ai.system`` of a litellm model string: its provider prefix, or a guess by name."""
    for separator in ("/", ":"):
        if separator in model:
            return model.split(separator, 1)[0]
    return next(
        (system for prefix, system in _KNOWN_SYSTEMS.items() if model.startswith(prefix)), "litellm"
    )


def _ns(event: EventBase, seconds_before: float = 0.0) -> int:
    return int((event.ts.timestamp() - seconds_before) * 1e9)


def _attributes(data: dict[str, Any], prefix: str = "harness.") -> dict[str, Any]:
    """Flat OpenTelemetry attributes from event data (nested dicts become dotted names)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _COMMON_FIELDS or value is None:
            continue
        if isinstance(value, dict):
            out.update(_attributes(value, f"{prefix}{key}."))
        elif isinstance(value, list):
            out[prefix + key] = [str(item) for item in value]
        else:
            out[prefix + key] = value
    return out


def _fields(event: EventBase) -> dict[str, Any]:
    """An event's own fields as attributes."""
    return _attributes(event.model_dump(mode="json"))


class OtelSink:
    """An event sink that turns a run's events into OpenTelemetry spans.

    Uses ``tracer_provider`` (for example an SDK provider with an exporter), or the global one.
    Raises :class:`ConfigError` when OpenTelemetry is not installed.
    """

    def __init__(self, *, tracer_provider: TracerProvider | None = None) -> None:
        try:
            from opentelemetry import trace
        except ImportError as err:
            raise MissingExtra("otel", "OpenTelemetry", "otel") from err
        self._trace = trace
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self._tracer = provider.get_tracer("harness")
        self._lock = threading.Lock()
        self._run_id = ""
        self._run: Span | None = None
        self._round: Span | None = None

    def emit(self, event: EventBase) -> None:
        with self._lock:
            self._handle(event)

    def _handle(self, event: EventBase) -> None:
        if isinstance(event, RunStart):
            self._run_id = event.run_id
            attributes = {"gen_ai.request.model": event.model, **_fields(event)}
            self._run = self._start("harness run", event, None, _ns(event), attributes)
        elif isinstance(event, RoundStart):
            self._end_round(event)
            self._round = self._start(
                f"round {event.round}", event, self._run, _ns(event), _fields(event)
            )
        elif isinstance(event, ModelCall):
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.system": gen_ai_system(event.model),
                "gen_ai.request.model": event.model,
                "gen_ai.usage.input_tokens": event.prompt_tokens,
                "gen_ai.usage.output_tokens": event.completion_tokens,
                "harness.role": event.role,
                "harness.cost_usd": event.cost_usd,
            }
            self._call_span(event, f"chat {event.model}", event.latency, attributes)
        elif isinstance(event, ToolStart):
            return  # the tool_call event that follows becomes the tool's span
        elif isinstance(event, ToolCallEvent):
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": event.name}
            failed = event.is_error or event.exit_code not in (0, None)
            self._call_span(
                event, f"execute_tool {event.name}", event.duration, attrs, failed=failed
            )
        elif isinstance(event, RoundEnd):
            if self._round is not None:
                self._round.set_attributes(_fields(event))
            self._end_round(event)
        elif isinstance(event, RunEnd):
            self._end_round(event)
            if self._run is not None:
                self._run.set_attributes(_fields(event))
                self._run.end(end_time=_ns(event))
                self._run = None
        else:
            target = self._round or self._run
            if target is not None:
                target.add_event(event.kind, _fields(event), _ns(event))

    def _start(
        self,
        name: str,
        event: EventBase,
        parent: Span | None,
        start: int,
        attributes: dict[str, Any],
    ) -> Span:
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        attributes = {"harness.run_id": event.run_id or self._run_id, **attributes}
        return self._tracer.start_span(
            name, context=context, attributes=attributes, start_time=start
        )

    def _call_span(
        self,
        event: EventBase,
        name: str,
        seconds: float,
        attributes: dict[str, Any],
        *,
        failed: bool = False,
    ) -> None:
        span = self._start(name, event, self._round or self._run, _ns(event, seconds), attributes)
        if failed:
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
        span.end(end_time=_ns(event))

    def _end_round(self, event: EventBase) -> None:
        if self._round is not None:
            self._round.end(end_time=_ns(event))
            self._round = None


def command_line_sink() -> tuple[OtelSink, Callable[[], None]]:
    """The sink ``harness run --otel`` uses, and the call that flushes it at the end.

    With an OTLP exporter installed (``opentelemetry-exporter-otlp``), spans go where the
    standard ``OTEL_EXPORTER_OTLP_*`` variables say; otherwise they are printed to stderr as JSON.
    """
    try:
        from opentelemetry.sdk.trace import TracerProvider as SdkProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError as err:
        raise MissingExtra("otel", "OpenTelemetry", "otel") from err
    exporter: Any
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    except ImportError:
        exporter = ConsoleSpanExporter(out=sys.stderr)
    provider = SdkProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return OtelSink(tracer_provider=provider), provider.shutdown
