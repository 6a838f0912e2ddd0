"""The gateway's own CPU per model request, against a direct litellm call to the same provider.

Three processes: a provider (an OpenAI-compatible chat-completions server on 127.0.0.1 that
answers every request with the same tool call, whole or as server-sent events), a client (it
sends the gateway a request in one of the three wire formats when told to, and reads the whole
answer), and this one, whose CPU is measured (``time.process_time``: every thread, litellm's
included). The direct call is ``litellm.completion`` with the same chat-completions messages
and tools (``stream=True``: every chunk read). Through the gateway the request is parsed,
translated (Anthropic and Responses by litellm's own code), checked against a budget and
redacted by the run's :class:`MeteredModel`, sent by :class:`LiteLLMModel` (not streamed:
the gateway streams the answer itself) and answered in the client's format. The two run in
pairs, back to back, the first of a pair alternating, each measured until the work it left to
litellm's logging threads is done too (:data:`SETTLE`); printed: the medians of each and the
median of the pairs' ratios (gateway / direct). A third call runs beside each pair: the
harness's own model path (the run's :class:`MeteredModel` over :class:`LiteLLMModel`, with the
messages decoded anew as the gateway has them), which the built-in agent pays per step too;
gateway / metered is the HTTP server's and the translation's share alone.

A second table isolates the gateway's own work: the same requests answered by a model that
replies at once (no provider, no litellm call), against the direct call; ``(direct + own) /
direct``, the median of the pairs' (each pair's own work against its direct call), is what the
gateway adds to a request whose model call costs what litellm's does.

    python bench/gateway.py [--pairs 41] [--wire chat|anthropic|responses|all]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOKEN = "harness-bench-token"
SYSTEM = "You are a careful software agent. " * 20
TASK = "Fix the failing test in calc.py; the test says add(2, 3) returned -1. " * 10
TOOL = {
    "type": "function",
    "function": {
        "name": "run_shell",
        "description": "Run a shell command in the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
MESSAGES = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "run_shell", "arguments": '{"command": "pytest -q"}'}}  # fmt: skip
USAGE = {"prompt_tokens": 300, "completion_tokens": 12, "total_tokens": 312}


def provider() -> None:
    """Serve chat completions on a free port (printed) until stdin closes."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            head = {"id": "chatcmpl-b", "created": 1, "model": body["model"]}
            if not body.get("stream"):
                message = {"role": "assistant", "content": None, "tool_calls": [CALL]}
                choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
                data = json.dumps({**head, "object": "chat.completion", "choices": [choice],
                                   "usage": USAGE}).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            chunk = {**head, "object": "chat.completion.chunk"}
            deltas = [
                {"role": "assistant", "content": None},
                {"tool_calls": [{"index": 0, **CALL}]},
            ]
            events = [{**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
                      for d in deltas]  # fmt: skip
            events.append({**chunk, "choices": [{"index": 0, "delta": {},
                                                 "finish_reason": "tool_calls"}], "usage": USAGE})  # fmt: skip
            text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(text.encode())
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    import threading

    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()


def _request(wire: str, stream: bool) -> tuple[str, dict[str, Any]]:
    if wire == "chat":
        return "/v1/chat/completions", {"model": "m", "messages": MESSAGES, "tools": [TOOL],
                                        "stream": stream}  # fmt: skip
    if wire == "anthropic":
        tool = {"name": "run_shell", "description": TOOL["function"]["description"],
                "input_schema": TOOL["function"]["parameters"]}  # fmt: skip
        return "/v1/messages", {"model": "m", "max_tokens": 4096, "system": SYSTEM,
                                "messages": [{"role": "user", "content": TASK}],
                                "tools": [tool], "stream": stream}  # fmt: skip
    tool = {"type": "function", **TOOL["function"]}
    return "/v1/responses", {"model": "m", "instructions": SYSTEM, "store": False,
                             "input": [{"role": "user", "content": TASK}], "tools": [tool],
                             "stream": stream, "max_output_tokens": 4096}  # fmt: skip


def client(port: int) -> None:
    """For each line ``WIRE STREAM`` on stdin, one request to the gateway; ``ok`` when read."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for line in sys.stdin:  # one connection kept alive, as the agents' HTTP clients keep theirs
        wire, stream = line.split()
        path, body = _request(wire, stream == "1")
        connection.request("POST", path, json.dumps(body), {"x-api-key": TOKEN})
        response = connection.getresponse()
        data = response.read()
        if response.will_close:
            connection.close()
        assert response.status == 200, data[:300]
        assert b"run_shell" in data, data[:300]
        print("ok", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=41)
    parser.add_argument("--wire", default="all", choices=["chat", "anthropic", "responses", "all"])
    args = parser.parse_args()
    from harness.gateway.gateway import Gateway
    from harness.models.budget import Budget, Meter, MeteredModel
    from harness.models.litellm_model import LiteLLMModel, load_litellm

    litellm = load_litellm()
    me = [sys.executable, str(Path(__file__).resolve())]
    served = subprocess.Popen([*me, "--provider"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert served.stdout is not None
    assert served.stdin is not None
    api_base = f"http://127.0.0.1:{served.stdout.readline().strip()}/v1"
    options = {"api_base": api_base, "api_key": "sk-bench-provider"}
    meter = Meter(Budget(tokens=10**12))
    model = MeteredModel(LiteLLMModel("openai/gpt-4o-mini", num_retries=0, **options), meter)
    wires = ["chat", "anthropic", "responses"] if args.wire == "all" else [args.wire]
    with Gateway(model, token=TOKEN, preload=["/messages", "/responses"]) as gateway:
        asker = subprocess.Popen([*me, "--client", str(gateway.port)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert asker.stdin is not None
        assert asker.stdout is not None

        through = partial(_ask, asker)

        direct = partial(_direct, litellm, options)

        def metered() -> None:
            model.complete(json.loads(json.dumps(MESSAGES)), [TOOL])

        print(f"{'wire':<10} {'stream':<6} {'direct ms':>10} {'metered ms':>11} "
              f"{'gateway ms':>11} {'gw/direct':>10} {'gw/metered':>11}")  # fmt: skip
        for wire in wires:
            for stream in (False, True):
                row = _pairs(partial(direct, stream), metered, partial(through, wire, stream),
                             args.pairs)  # fmt: skip
                print(f"{wire:<10} {'yes' if stream else 'no':<6} {row[0]:>10.2f} "
                      f"{row[1]:>11.2f} {row[2]:>11.2f} {row[3]:>10.3f} {row[4]:>11.3f}")  # fmt: skip
        asker.stdin.close()
        asker.wait()
    print(f"\n{'wire':<10} {'stream':<6} {'direct ms':>10} {'own ms':>8} {'(d+own)/d':>10}")
    with Gateway(_Instant(), token=TOKEN, preload=["/messages", "/responses"]) as alone:
        asker = subprocess.Popen([*me, "--client", str(alone.port)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
        for wire in wires:
            for stream in (False, True):
                row = _pairs(partial(direct, stream), partial(direct, stream),
                             partial(_ask, asker, wire, stream), args.pairs)  # fmt: skip
                print(f"{wire:<10} {'yes' if stream else 'no':<6} {row[0]:>10.2f} "
                      f"{row[2]:>8.2f} {1 + row[3]:>10.3f}")  # fmt: skip
        assert asker.stdin is not None
        asker.stdin.close()
        asker.wait()
    served.stdin.close()
    served.wait()


class _Instant:
    """A model that answers at once with the provider's tool call: the gateway's work alone."""

    name = "instant"
    context_window = 128_000

    def complete(self, messages: Any, tools: Any = None, *, max_tokens: Any = None) -> Any:
        from harness.core.usage import Usage
        from harness.models.base import Reply, ToolCall

        call = ToolCall("run_shell", CALL["function"]["arguments"], "call_1")  # type: ignore[index]
        return Reply(None, (call,), Usage(USAGE["prompt_tokens"], USAGE["completion_tokens"]))

    def count_tokens(self, messages: Any, tools: Any = None) -> int:
        return USAGE["prompt_tokens"]

    def price_per_token(self) -> tuple[float, float]:
        return 0.0, 0.0


def _ask(asker: subprocess.Popen[str], wire: str, stream: bool) -> None:
    """Have the client send the gateway one request, and wait until it has read the answer."""
    assert asker.stdin is not None
    assert asker.stdout is not None
    asker.stdin.write(f"{wire} {int(stream)}\n")
    asker.stdin.flush()
    assert asker.stdout.readline().strip() == "ok"


def _direct(litellm: Any, options: dict[str, str], stream: bool) -> None:
    """The same request sent by litellm itself, every chunk read when streamed."""
    reply = litellm.completion(model="openai/gpt-4o-mini", messages=MESSAGES, tools=[TOOL],
                               stream=stream, **options)  # fmt: skip
    if stream:
        for _ in reply:
            pass


SETTLE = 0.03
"""Seconds each measured call is given after it returns, inside its window, for the work litellm
leaves to its logging threads: each call is charged its own, never the one before it."""


def _cpu(call: Callable[[], None]) -> float:
    started = time.process_time()
    call()
    time.sleep(SETTLE)
    return (time.process_time() - started) * 1000


def _pairs(
    direct: Callable[[], None],
    metered: Callable[[], None],
    gateway: Callable[[], None],
    pairs: int,
) -> list[float]:
    """Medians of the direct, metered and gateway CPU (ms), and of the ratios gateway / direct
    and gateway / metered, each call of a pair run back to back, the first alternating."""
    for _ in range(5):  # warm every path
        direct()
        metered()
        gateway()
    runs: dict[str, list[float]] = {"direct": [], "metered": [], "gateway": []}
    calls = {"direct": direct, "metered": metered, "gateway": gateway}
    for index in range(pairs):
        order = ["gateway", "direct", "metered"] if index % 2 else ["direct", "metered", "gateway"]
        for name in order:
            runs[name].append(_cpu(calls[name]))
    ratios = [g / d for g, d in zip(runs["gateway"], runs["direct"], strict=True)]
    own = [g / m for g, m in zip(runs["gateway"], runs["metered"], strict=True)]
    medians = [statistics.median(runs[name]) for name in ("direct", "metered", "gateway")]
    return [*medians, statistics.median(ratios), statistics.median(own)]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--provider"]:
        provider()
    elif sys.argv[1:2] == ["--client"]:
        client(int(sys.argv[2]))
    else:
        main()
