"""Every real provider, through litellm.

litellm is imported on the first call that needs it (it takes seconds to import), never when this
module is imported: counting tokens and constructing a model stay cheap.

Retries are ours, not litellm's: litellm is always called with ``num_retries=0``; each failure
is named (:mod:`harness.models.provider_errors`) and only what can succeed on a second try is
retried (an unreachable server, timeouts, rate limits, server errors), after the pause the
provider asked for (``Retry-After``) or an exponential backoff, with jitter. Bad requests,
authentication, permission, unknown-model and context-window errors fail at once. Every failure
ends in a :class:`~harness.models.base.ModelError` that names the model, the kind of error and
the attempts made.

``fallbacks`` pass through to ``litellm.completion``, which tries each fallback model in turn
with the same arguments (a string fallback inherits ``api_base`` and ``api_key``; a dict such as
``{"model": ..., "api_base": ...}`` overrides them). litellm reports a chain that failed
throughout as a connection error, so our retry loop retries the whole chain.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from functools import cache, cached_property
from types import ModuleType
from typing import Annotated, Any

from pydantic import Field

from harness.core.errors import ConfigError
from harness.core.lasting import lasting
from harness.core.section import check_value
from harness.core.usage import Usage
from harness.models.base import (
    ContextWindow,
    Message,
    ModelError,
    Reply,
    ReplyTokens,
    ToolCall,
    ToolSchema,
    UnknownModelError,
    new_call_id,
)
from harness.models.provider_errors import (
    ErrorKind,
    classify,
    connection_failure,
    retry_after,
    retry_delay,
)
from harness.models.thread_loop import thread_loop
from harness.models.tokens import CountsTokens, TokenCounter, configure_offline_environment

DEFAULT_CONTEXT_WINDOW = 32_000
"""Input window assumed for models litellm does not know (local and self-hosted models)."""

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
CACHE_BREAKPOINTS: tuple[dict[str, Any], ...] = (
    {"location": "message", "role": "system"},
    {"location": "message", "index": -1},
)
"""Where prompt-cache breakpoints go for providers that need them (Claude on Anthropic, Bedrock
and Vertex AI): after the system prompt (which caches the tool schemas before it too) and on the
last message, so the next step reads the whole conversation so far from the cache."""

_BREAKPOINT_PROVIDERS = frozenset({"anthropic", "bedrock", "bedrock_converse", "vertex_ai"})

REQUEST_SECONDS = 120.0
"""How long one model request may take, seconds, unless ``timeout`` says otherwise."""

_Timeout = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]
_Backoff = Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]
_Retries = Annotated[int, Field(ge=0, strict=True)]

_RESERVED_KWARGS = frozenset({"model", "messages", "tools", "stream", "max_retries", "logger_fn"})


@cache
def load_litellm() -> ModuleType:
    """Import litellm once, offline and quiet.

    Its cost map stays local, its debug banners are off, and its loggers only pass critical
    records unless ``LITELLM_LOG`` asks otherwise (every failure reaches the caller as a
    ModelError, so litellm's own error logs would only repeat it). The import is
    :func:`~harness.core.lasting.lasting`: no garbage collection runs during it and none walks
    its objects afterwards, at exit included (1.3-1.5 s of CPU of the 2.7 s it cost; see
    ``bench/verify_cost.py``).
    """
    configure_offline_environment()
    with lasting():
        import litellm

    litellm.suppress_debug_info = True
    if "LITELLM_LOG" not in os.environ:
        for name in _LITELLM_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
    return litellm


def provider(name: str) -> str | None:
    """litellm's provider for the model string ``name``; None when it names none."""
    try:
        return str(load_litellm().get_llm_provider(name)[1])
    except Exception:  # litellm raises BadRequestError for a string it cannot place
        return None


class LiteLLMModel(CountsTokens):
    """A chat model reached through litellm: any provider, by model string.

    ``timeout`` (seconds, finite) bounds each request; ``num_retries`` is how many times a
    retryable failure is retried, pausing as long as a rate limit's ``Retry-After`` asks, else
    ``retry_backoff * 2**n`` seconds (see :func:`~harness.models.provider_errors.retry_delay`).
    ``max_tokens`` is the default completion limit of each call.
    ``context_window`` overrides litellm's figure for the model. ``prompt_caching`` marks cache
    breakpoints (:data:`CACHE_BREAKPOINTS`) for Claude models; other providers cache a stable
    prefix by themselves. Other keywords (``api_base``,
    ``api_key``, ``fallbacks``, ``temperature``, ...) go to ``litellm.completion`` unchanged.
    """

    def __init__(
        self,
        model: str,
        *,
        timeout: float = REQUEST_SECONDS,
        num_retries: int = 2,
        retry_backoff: float = 1.0,
        max_tokens: int | None = None,
        context_window: int | None = None,
        prompt_caching: bool = True,
        **litellm_kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("model: expected a litellm model string such as 'openai/gpt-4o'")
        if not model.isprintable():  # it is sent in headers and in an external agent's settings
            raise ConfigError(f"model: {model!r} holds a character that is not printable")
        self.timeout: float = check_value(_Timeout, timeout, "timeout")
        self.num_retries: int = check_value(_Retries, num_retries, "num_retries")
        self.retry_backoff: float = check_value(_Backoff, retry_backoff, "retry_backoff")
        check_value(ReplyTokens, max_tokens, "max_tokens")
        check_value(ContextWindow, context_window, "context_window")
        reserved = sorted(_RESERVED_KWARGS & litellm_kwargs.keys())
        if reserved:
            raise ConfigError(f"{reserved[0]}: set by LiteLLMModel itself, not a litellm keyword")
        self.name = model
        self.max_tokens = max_tokens
        self.litellm_kwargs = litellm_kwargs
        self.prompt_caching = prompt_caching
        self._context_window = context_window
        self._counter = TokenCounter(model)
        self.pricing_error: str | None = None
        """Why this model's replies could not be priced, once one could not be."""

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.name!r})"

    @property
    def context_window(self) -> int:
        """The override, else litellm's ``max_input_tokens``, else :data:`DEFAULT_CONTEXT_WINDOW`."""
        if self._context_window is not None:
            return self._context_window
        info = self._model_info
        return int(info.get("max_input_tokens") or DEFAULT_CONTEXT_WINDOW)

    def price_per_token(self) -> tuple[float, float]:
        info = self._model_info
        return (
            float(info.get("input_cost_per_token") or 0.0),
            float(info.get("output_cost_per_token") or 0.0),
        )

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Reply:
        litellm = load_litellm()
        request: dict[str, Any] = {
            **self.litellm_kwargs,
            "model": self.name,
            "messages": messages,
            "timeout": self.timeout,
            "num_retries": 0,
        }
        if tools:
            request["tools"] = tools
        if self.prompt_caching and self._needs_breakpoints:
            request.setdefault("cache_control_injection_points", list(CACHE_BREAKPOINTS))
        limit = max_tokens if max_tokens is not None else self.max_tokens
        if limit is not None:
            request["max_tokens"] = limit
        sent: list[dict[str, Any]] = []
        request["logger_fn"] = lambda details: _keep_body(details, sent)
        thread_loop()
        response = self._call(litellm, request)
        try:
            reply = self._reply(litellm, response, messages, tools)
        except Exception as exc:  # an answer of a form litellm lets through (no choice in it)
            raise ModelError(
                f"model {self.name}: {ErrorKind.SERVER.value}: its answer could not be read "
                f"({type(exc).__name__}: {exc}); not sent again, it may have been paid for",
                kind=ErrorKind.SERVER,
            ) from exc
        return dataclasses.replace(reply, sent=sent[-1]) if sent else reply

    def _call(self, litellm: ModuleType, request: dict[str, Any]) -> Any:
        attempt = 1
        while True:
            try:
                return litellm.completion(**request)
            except Exception as exc:
                kind = classify(litellm, exc)
                if not kind.retryable or attempt > self.num_retries:
                    message = self._failure(kind, exc, attempt)
                    error = UnknownModelError if kind is ErrorKind.UNKNOWN_MODEL else ModelError
                    raise error(message, kind=kind) from exc
                asked = retry_after(litellm, exc) if kind is ErrorKind.RATE_LIMIT else None
            time.sleep(retry_delay(attempt, self.retry_backoff, asked))
            attempt += 1

    def _failure(self, kind: ErrorKind, exc: Exception, attempts: int) -> str:
        verdict = "gave up" if kind.retryable else "not retryable"
        tried = f"{attempts} attempt" + ("" if attempts == 1 else "s")
        if kind is ErrorKind.UNREACHABLE:  # litellm's "status 500" would hide the cause and URL
            base = self.litellm_kwargs.get("api_base") or "(the provider's default)"
            return (
                f"model {self.name}: {kind.value} {base}: {connection_failure(exc)}, "
                f"{verdict} after {tried}"
            )
        status = getattr(exc, "status_code", None)
        error = type(exc).__name__ + (f" (status {status})" if status is not None else "")
        message = f"model {self.name}: {kind.value}: {error}, {verdict} after {tried}: {exc}"
        if kind is ErrorKind.UNKNOWN_MODEL:
            message += f"; the provider does not know {self.name!r}: check the model's name"
        return message

    def _reply(
        self,
        litellm: ModuleType,
        response: Any,
        messages: list[Message],
        tools: list[ToolSchema] | None,
    ) -> Reply:
        message = response.choices[0].message
        content = message.content
        calls = tuple(_tool_call(call) for call in message.tool_calls or ())
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        reported = bool(prompt)
        if not reported:  # the provider reported no usage: count it ourselves, and price that
            prompt = self.count_tokens(messages, tools)
            completion = self._counter.count_reply(content, calls)
            response.usage = litellm.Usage(
                prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
            )
        cost = self._cost(litellm, response, attached=reported)
        unpriced = int(cost is None)
        cached = _cached_tokens(usage) if reported else 0
        usage_of = Usage(prompt, completion, cost or 0.0, 1, unpriced, cached)
        reasoning = getattr(message, "reasoning_content", None)
        return Reply(
            content, calls, usage_of, reasoning if isinstance(reasoning, str) else None,
            truncated=response.choices[0].finish_reason == "length",
        )  # fmt: skip

    def _cost(self, litellm: ModuleType, response: Any, *, attached: bool) -> float | None:
        """What the reply cost in USD; ``None`` where it cannot be priced.

        litellm's own figure for the response comes first (``attached``: it priced the usage the
        provider reported, cached tokens included, for the model that actually answered). Else
        the reply is priced with the model name as given, provider prefix included. Any failure
        to price makes the call unpriced and is kept in :attr:`pricing_error`; it never ends a
        run, and a model that could not be priced once is not priced again.
        """
        if attached:
            cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
            if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
                return float(cost)
        if self.pricing_error is not None:
            return None
        try:
            return float(litellm.completion_cost(completion_response=response, model=self.name))
        except Exception as exc:  # recorded: the call counts as unpriced
            self.pricing_error = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            return None

    @cached_property
    def _needs_breakpoints(self) -> bool:
        """Whether the provider caches prompts only at marked breakpoints (Claude models)."""
        found = provider(self.name)  # None where litellm cannot place it: the call will say so
        return found in _BREAKPOINT_PROVIDERS and (
            found == "anthropic" or "claude" in self.name.lower()
        )

    @cached_property
    def _model_info(self) -> dict[str, Any]:
        """litellm's cost-map entry for the model; empty where litellm does not know it."""
        litellm = load_litellm()
        try:
            return dict(litellm.get_model_info(self.name))
        except Exception:  # not mapped, or a model string litellm cannot place: no entry
            return {}


def _keep_body(details: Any, sent: list[dict[str, Any]]) -> None:
    """litellm's report before a request: the body it puts on the wire, added to ``sent``
    (``extra_body`` merged in, as the OpenAI client does when it sends it)."""
    arguments = details.get("additional_args") if isinstance(details, dict) else None
    body = arguments.get("complete_input_dict") if isinstance(arguments, dict) else None
    if isinstance(body, dict):
        body = dict(body)
        extra = body.pop("extra_body", None)
        sent.append({**body, **extra} if isinstance(extra, dict) else body)


def _tool_call(call: Any) -> ToolCall:
    """A provider's tool call, its arguments kept as the raw string it sent."""
    function = call.function
    arguments = function.arguments
    if arguments is None:
        arguments = ""
    elif not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return ToolCall(name=function.name or "", arguments=arguments, id=call.id or new_call_id())


def _cached_tokens(usage: Any) -> int:
    """Prompt tokens read from the provider's cache (litellm puts Anthropic's
    ``cache_read_input_tokens`` in ``prompt_tokens_details.cached_tokens`` too)."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or getattr(usage, "cache_read_input_tokens", 0)
    return int(cached or 0)
