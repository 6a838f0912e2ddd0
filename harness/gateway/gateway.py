"""The model gateway: the endpoints coding agents speak, answered by the run's model.

An external agent never talks to a provider and never holds its key: it talks to the gateway,
with a token valid for one run. Each request is turned into chat-completions form (see
:mod:`harness.gateway.wire`) and answered through a
:class:`~harness.models.budget.MeteredModel`, the run's own: so the run's budget is checked
before the request leaves, its secrets are redacted from it, and it and its reply are recorded
in the trajectory. The reply is redacted by the same redactor on its way back to the agent.

A request the gateway must refuse for good (a budget or the run's time spent, the request cap
reached, the model failing after its retries) is answered with an error the agent sees, and
the gateway's :attr:`Gateway.ending` says why; whoever runs the agent ends it then.
"""

from __future__ import annotations

import hmac
import operator
import pkgutil
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import orjson

from harness.core.errors import Stopped
from harness.core.redact import redact_json_text
from harness.core.text import UNPAIRED
from harness.gateway.server import BoundedServer, Response, ServerLimits, json_response
from harness.gateway.wire import BadRequest, Wire, check_depth, error_body
from harness.models.base import Model, ModelError, Reply, ToolCall
from harness.models.budget import metered

WIRES: Mapping[str, str] = {
    "/chat/completions": "harness.gateway.chat:ChatWire",
    "/messages": "harness.gateway.anthropic:AnthropicWire",
    "/messages/count_tokens": "harness.gateway.anthropic:AnthropicWire",
    "/responses": "harness.gateway.responses:ResponsesWire",
}
"""Each endpoint (below ``/v1``) and the wire that speaks its format, made on first use (the
Anthropic and Responses wires import litellm for its translations)."""
COUNT_TOKENS = "/messages/count_tokens"


@dataclass(frozen=True)
class GatewayAddress:
    """How an agent reaches the gateway: ``base_url`` (no ``/v1``), its token, the model's name."""

    base_url: str
    token: str
    model: str


@dataclass(frozen=True)
class Ending:
    """Why the gateway refused for good: the session must end."""

    reason: Literal["stopped", "requests", "error"]
    message: str
    stopped: Stopped | None = None
    """The run-wide stop (a budget, the run's time) behind ``"stopped"``."""
    error: ModelError | None = None
    """The model's failure behind ``"error"``."""


class Gateway:
    """Serves ``model`` to one agent session; a context manager (served while inside).

    ``model``: a :class:`~harness.models.budget.MeteredModel` serves as it is (its budget, its
    redactor, its trajectory); any other model is served behind one of its own (no budget, the
    environment's secrets redacted): every request and every reply passes its redactor.
    ``token``: the one credential it takes (``Authorization: Bearer`` or ``x-api-key``;
    default: a fresh random one). ``max_requests``: model requests it answers; one more is
    refused and ends the session. ``socket_path``: serve on that unix socket (bound into a sandbox); else on a free port of
    127.0.0.1. ``preload``: endpoints whose wire is made as the gateway starts, in the
    background (so an agent's first request does not wait for litellm's import).
    """

    def __init__(
        self,
        model: Model,
        *,
        token: str | None = None,
        max_requests: int | None = None,
        socket_path: Path | None = None,
        limits: ServerLimits | None = None,
        preload: Sequence[str] = (),
    ) -> None:
        self.model = metered(model)
        self.token = token or "harness-" + secrets.token_urlsafe(24)
        self.max_requests = max_requests
        self.socket_path = socket_path
        self.limits = limits or ServerLimits()
        self.requests = 0
        """Model requests answered so far."""
        self.ending: Ending | None = None
        self.ended = threading.Event()
        """Set with :attr:`ending`: the session must end."""
        # one request at a time, read, counted or called: the trajectory keeps order, a count
        # (seconds of CPU for a large body) takes one core at most, and one body's objects are
        # in memory at most (a body of 32 MB of empty lists is some 1 GB of them)
        self._calls = threading.Lock()
        self._server: BoundedServer | None = None
        self._wires: dict[str, Wire] = {}
        self._making = threading.Lock()
        self._preload = tuple(preload)

    def __enter__(self) -> Gateway:
        for endpoint in self._preload:
            threading.Thread(target=self._wire, args=(endpoint,), daemon=True).start()
        self._server = BoundedServer(
            self._answer, self._admit, socket_path=self.socket_path, limits=self.limits
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None

    @property
    def port(self) -> int:
        """The port served on 127.0.0.1 (0 when serving a unix socket)."""
        assert self._server is not None, "the gateway is not serving"
        return self._server.port

    def address(self, base_url: str | None = None) -> GatewayAddress:
        """The agent's view: ``base_url`` (default: this port of 127.0.0.1), token and model."""
        url = base_url or f"http://127.0.0.1:{self.port}"
        return GatewayAddress(base_url=url, token=self.token, model=self.model.name)

    def _admit(self, path: str, headers: dict[str, str]) -> Response | None:
        authorization = headers.get("authorization", "")
        scheme, _, credentials = authorization.partition(" ")  # a scheme is read in any case
        given = headers.get("x-api-key") or (
            credentials if scheme.lower() == "bearer" else authorization
        )
        if hmac.compare_digest(given.strip().encode(), self.token.encode()):
            return None
        message = "the gateway takes only this run's token"
        return self._error(401, _endpoint(path), "authentication_error", message)

    def _answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Response:
        endpoint = _endpoint(path)
        if method == "GET" and endpoint == "/models":
            model = {"id": self.model.name, "object": "model", "owned_by": "harness"}
            return json_response(200, {"object": "list", "data": [model]})
        wire = self._wire(endpoint)
        if method != "POST" or wire is None:
            return self._error(404, endpoint, "not_found_error", f"no endpoint {path}")
        with self._calls:
            return self._request(endpoint, wire, body)

    def _request(self, endpoint: str, wire: Wire, body: bytes) -> Response:
        """A POST to ``endpoint``, read by ``wire`` and answered, under the calls' lock."""
        try:
            data = orjson.loads(body)
            if not isinstance(data, dict):
                raise BadRequest("the body must be a JSON object")
            check_depth(data)
            request = wire.parse(data)
        except (ValueError, RecursionError) as exc:  # BadRequest, or JSON that does not parse
            return self._error(400, endpoint, "invalid_request_error", str(exc))
        refusal = self._refusal(counting=endpoint == COUNT_TOKENS)
        if refusal is not None:
            return self._error(400, endpoint, "invalid_request_error", refusal)
        if endpoint == COUNT_TOKENS:  # counted offline: no model request, no step
            count = self.model.count_tokens(request.messages, request.tools)
            return json_response(200, {"input_tokens": count})
        try:
            reply = self.model.complete(
                request.messages, request.tools, max_tokens=request.max_tokens
            )
        except Stopped as stop:
            self._end(Ending("stopped", stop.message, stopped=stop))
            return self._error(400, endpoint, "invalid_request_error", stop.message)
        except ModelError as exc:
            self._end(Ending("error", str(exc), error=exc))
            return self._error(502, endpoint, "api_error", f"model error: {exc}")
        except Exception as exc:  # a fault of the harness's own: said, and the session goes on
            message = f"the gateway failed: {type(exc).__name__}: {exc}"
            return self._error(500, endpoint, "api_error", message)
        self.requests += 1
        reply = self._redacted(reply)
        try:
            if request.stream:  # the reply is whole: its events go in one body, the connection kept
                return Response(200, b"".join(wire.stream(request, reply)), "text/event-stream")
            return json_response(200, wire.answer(request, reply))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # pydantic's: ValueError
            # a reply its wire cannot write (an Anthropic tool_use's input must be an object)
            message = f"the model's reply cannot be written in this endpoint's form: {exc}"
            return self._error(502, endpoint, "api_error", message)

    def _wire(self, endpoint: str) -> Wire | None:
        """The wire of ``endpoint`` (made once), or None for an endpoint the gateway lacks."""
        where = WIRES.get(endpoint)
        if where is None:
            return None
        made = self._wires.get(where)
        if made is not None:
            return made
        with self._making:
            if where not in self._wires:
                self._wires[where] = pkgutil.resolve_name(where)()
            return self._wires[where]

    def _refusal(self, *, counting: bool) -> str | None:
        """Why no more requests are answered (``counting``: counted), or None."""
        if self.ending is not None:
            return f"the session has ended: {self.ending.message}"
        if not counting and self.max_requests is not None and self.requests >= self.max_requests:
            message = f"request cap of {self.max_requests} model requests reached"
            self._end(Ending("requests", message))
            return message
        return None

    def _end(self, ending: Ending) -> None:
        if self.ending is None:
            self.ending = ending
            self.ended.set()

    def _error(self, status: int, endpoint: str, kind: str, message: str) -> Response:
        """An error answer, its message redacted: a provider's error may name its key or URL."""
        return json_response(status, error_body(endpoint, kind, self.model.redact(message)))

    def _redacted(self, reply: Reply) -> Reply:
        """``reply`` with its text and its calls (names, arguments, ids) redacted, and a
        surrogate standing alone in them (which no UTF-8 answer can hold) made U+FFFD; itself
        where nothing was."""

        def redact(text: str) -> str:
            return UNPAIRED.sub("\ufffd", self.model.redact(text))

        content = redact(reply.content) if reply.content else reply.content
        calls = tuple(_call_redacted(call, redact) for call in reply.tool_calls)
        if content == reply.content and all(map(operator.is_, calls, reply.tool_calls)):
            return reply
        return replace(reply, content=content, tool_calls=calls)


def _call_redacted(call: ToolCall, redact: Callable[[str], str]) -> ToolCall:
    name, id_ = redact(call.name), redact(call.id)
    arguments = redact_json_text(call.arguments_json, redact)
    if (name, arguments, id_) == (call.name, call.arguments_json, call.id):
        return call
    return ToolCall(name, arguments, id_)


def _endpoint(path: str) -> str:
    return path.removeprefix("/v1") if path.startswith("/v1/") else path
