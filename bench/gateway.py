"""The gateway's CPU per model request, against litellm's own call for the same request.

Three processes: a provider (an OpenAI-compatible chat-completions server on 127.0.0.1 that
answers every request with the same tool call, whole or as server-sent events), a client (it
sends the gateway a request in one of the three wire formats when told to, and reads the whole
answer), and this one, whose CPU is measured (``time.process_time``: every thread, litellm's
included). Through the gateway a request is parsed, translated (Anthropic and Responses by
litellm's own code), checked against a budget and redacted by the run's :class:`MeteredModel`,
sent by :class:`LiteLLMModel` (not streamed: the gateway streams the answer itself) and
answered in the client's format. litellm's own call for the same request is its entry for that
wire, to the same provider: ``litellm.completion`` (chat), ``litellm.anthropic.messages.create``
and ``litellm.responses``, which translate with the same code and send a chat completion
(streamed: every chunk or event read). The calls run in rounds, back to back, each first in
turn, each measured until the work it left to litellm's logging threads is done too
(:data:`SETTLE`). A third call in each round is the bench's own signal to its client, measured
alone and taken off the gateway's figure of that round (the direct call makes none). Printed:
the medians of each, and the median of the rounds' ratios.

A second table isolates the gateway's own work: the same requests answered by a model that
replies at once (no provider, no litellm call), against ``litellm.completion``;
``(completion + own) / completion``, the median of the rounds', is what the gateway adds to a
request whose model call costs what litellm's does (translation included).

``--time-budget`` gives the run's budget a time limit, as a bounded run has: each model call
then runs on a thread that can be left behind at the deadline.

    python bench/gateway.py [--pairs 41] [--wire chat|anthropic|responses|all] [--history 0]
                            [--time-budget]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
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
USAGE = {"prompt_tokens": 300, "completion_tokens": 12, "total_tokens": 312}
NUMBERS = itertools.count()
"""Each request and each answer is told apart by a number: no memo of the gateway's (the
redactor's) meets a text it has seen, as in a session, where every request and reply is new."""


def tool_call(number: int) -> dict[str, Any]:
    arguments = json.dumps({"command": f"pytest -q -k case_{number}"})
    return {"id": f"call_{number}", "type": "function",
            "function": {"name": "run_shell", "arguments": arguments}}  # fmt: skip


def provider() -> None:
    """Serve chat completions on a free port (printed) until stdin closes."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            head = {"id": "chatcmpl-b", "created": 1, "model": body["model"]}
            call = tool_call(next(NUMBERS))
            if not body.get("stream"):
                message = {"role": "assistant", "content": None, "tool_calls": [call]}
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
                {"tool_calls": [{"index": 0, **call}]},
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


HISTORY = 0
"""Turns of a session before each request (a tool call and its output each): ``--history``."""


def _output(turn: int) -> str:
    return "\n".join(
        f"{n:4d}  def f{n}(a, b):  return a + b" for n in range(turn * 12, turn * 12 + 12)
    )


def _history(wire: str) -> list[dict[str, Any]]:
    """The session so far in ``wire``'s form: :data:`HISTORY` turns after the task."""
    turns = []
    for turn in range(HISTORY):
        call_id, output = f"call_h{turn}", _output(turn)
        arguments = {"command": f"sed -n {turn * 12 + 1},{turn * 12 + 12}p calc.py"}
        if wire == "chat":
            call = {"id": call_id, "type": "function",
                    "function": {"name": "run_shell", "arguments": json.dumps(arguments)}}  # fmt: skip
            turns += [{"role": "assistant", "content": None, "tool_calls": [call]},
                      {"role": "tool", "tool_call_id": call_id, "content": output}]  # fmt: skip
        elif wire == "anthropic":
            use = {"type": "tool_use", "id": call_id, "name": "run_shell", "input": arguments}
            result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
            turns += [{"role": "assistant", "content": [use]},
                      {"role": "user", "content": [result]}]  # fmt: skip
        else:
            turns += [{"type": "function_call", "call_id": call_id, "name": "run_shell",
                       "arguments": json.dumps(arguments)},
                      {"type": "function_call_output", "call_id": call_id, "output": output}]  # fmt: skip
    return turns


def _request(wire: str, stream: bool, number: int) -> tuple[str, dict[str, Any]]:
    """Request ``number`` in ``wire``'s form: the task, the session's :data:`HISTORY`, and a
    last user line of its own."""
    last = f"Request {number}: go on."
    if wire == "chat":
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK},
                    *_history(wire), {"role": "user", "content": last}]  # fmt: skip
        return "/v1/chat/completions", {"model": "m", "messages": messages, "tools": [TOOL],
                                        "stream": stream}  # fmt: skip
    if wire == "anthropic":
        tool = {"name": "run_shell", "description": TOOL["function"]["description"],
                "input_schema": TOOL["function"]["parameters"]}  # fmt: skip
        messages = [{"role": "user", "content": TASK}, *_history(wire)]
        if HISTORY:  # the roles alternate: the last line joins the last tool result
            messages[-1] = {"role": "user",
                            "content": [*messages[-1]["content"], {"type": "text", "text": last}]}  # fmt: skip
        else:
            messages[-1] = {"role": "user", "content": f"{TASK}{last}"}
        return "/v1/messages", {"model": "m", "max_tokens": 4096, "system": SYSTEM,
                                "messages": messages, "tools": [tool], "stream": stream}  # fmt: skip
    tool = {"type": "function", **TOOL["function"]}
    given = [{"role": "user", "content": TASK}, *_history(wire), {"role": "user", "content": last}]
    return "/v1/responses", {"model": "m", "instructions": SYSTEM, "store": False,
                             "input": given, "tools": [tool], "stream": stream,
                             "max_output_tokens": 4096}  # fmt: skip


def client(port: int) -> None:
    """For each line ``WIRE STREAM NUMBER`` on stdin, one request to the gateway; ``ok`` when
    read. A line ``signal 0 0`` is answered at once: the bench's side of a request alone."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for line in sys.stdin:  # one connection kept alive, as the agents' HTTP clients keep theirs
        wire, stream, number = line.split()
        if wire != "signal":
            path, body = _request(wire, stream == "1", int(number))
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
    parser.add_argument(
        "--history", type=int, default=0, help="turns of a session before each request"
    )
    parser.add_argument(
        "--time-budget", action="store_true", help="a budget with a time limit (a day)"
    )
    args = parser.parse_args()
    global HISTORY
    HISTORY = args.history
    from harness.gateway.gateway import Gateway
    from harness.models.budget import Budget, Meter, MeteredModel
    from harness.models.litellm_model import LiteLLMModel, load_litellm

    litellm = load_litellm()
    # litellm's own Anthropic entry sends an OpenAI model's request as a chat completion, as
    # the gateway does, not as a Responses call (the provider here has chat completions only)
    litellm.use_chat_completions_url_for_anthropic_messages = True
    me = [sys.executable, str(Path(__file__).resolve())]
    served = subprocess.Popen([*me, "--provider"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert served.stdout is not None
    assert served.stdin is not None
    options = {"api_base": f"http://127.0.0.1:{served.stdout.readline().strip()}/v1",
               "api_key": "sk-bench-provider"}  # fmt: skip
    meter = Meter(Budget(tokens=10**12, seconds=86_400 if args.time_budget else None))
    model = MeteredModel(LiteLLMModel(MODEL, num_retries=0, **options), meter)
    wires = ["chat", "anthropic", "responses"] if args.wire == "all" else [args.wire]
    print("Through the gateway, against litellm's own call for the same request and wire:")
    print(f"{'wire':<10} {'stream':<6} {'litellm ms':>11} {'gateway ms':>11} {'gw/litellm':>11}")
    with _asking(Gateway(model, token=TOKEN, preload=PRELOAD)) as ask:
        for wire in wires:
            for stream in (False, True):
                runs = _pairs({"litellm": partial(_direct, litellm, options, wire, stream),
                               "gateway": partial(ask, wire, stream),
                               "signal": partial(ask, "signal", False)}, args.pairs)  # fmt: skip
                gateway = _less(runs["gateway"], runs["signal"])
                print(f"{wire:<10} {'yes' if stream else 'no':<6} "
                      f"{statistics.median(runs['litellm']):>11.2f} "
                      f"{statistics.median(gateway):>11.2f} "
                      f"{statistics.median(_over(gateway, runs['litellm'])):>11.3f}")  # fmt: skip
    print("\nThe gateway's own work (a model that answers at once), against litellm.completion:")
    print(f"{'wire':<10} {'stream':<6} {'completion ms':>14} {'own ms':>8} {'(c+own)/c':>10}")
    with _asking(Gateway(_Instant(), token=TOKEN, preload=PRELOAD)) as ask:
        for wire in wires:
            for stream in (False, True):
                runs = _pairs({"completion": partial(_direct, litellm, options, "chat", stream),
                               "own": partial(ask, wire, stream),
                               "signal": partial(ask, "signal", False)}, args.pairs)  # fmt: skip
                own = _less(runs["own"], runs["signal"])
                added = [1 + r for r in _over(own, runs["completion"])]
                print(f"{wire:<10} {'yes' if stream else 'no':<6} "
                      f"{statistics.median(runs['completion']):>14.2f} "
                      f"{statistics.median(own):>8.2f} {statistics.median(added):>10.3f}")  # fmt: skip
    served.stdin.close()
    served.wait()


MODEL = "openai/gpt-4o-mini"
PRELOAD = ("/messages", "/responses")


@contextlib.contextmanager
def _asking(gateway: Any) -> Iterator[Callable[[str, bool], None]]:
    """Serve ``gateway`` to a client process; yields: have it send one request and read the
    answer (``signal``: only the bench's side of that)."""
    with gateway:
        asker = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--client",
                                  str(gateway.port), str(HISTORY)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert asker.stdin is not None
        assert asker.stdout is not None

        def ask(wire: str, stream: bool) -> None:
            asker.stdin.write(f"{wire} {int(stream)} {next(NUMBERS)}\n")  # type: ignore[union-attr]
            asker.stdin.flush()  # type: ignore[union-attr]
            assert asker.stdout.readline().strip() == "ok"  # type: ignore[union-attr]

        try:
            yield ask
        finally:
            asker.stdin.close()
            asker.wait()


class _Instant:
    """A model that answers at once with the provider's tool call: the gateway's work alone."""

    name = "instant"
    context_window = 128_000

    def __init__(self) -> None:
        from harness.core.usage import Usage
        from harness.models.base import Reply, ToolCall

        self.usage = Usage(USAGE["prompt_tokens"], USAGE["completion_tokens"])
        self.reply, self.call = Reply, ToolCall

    def complete(self, messages: Any, tools: Any = None, *, max_tokens: Any = None) -> Any:
        function = tool_call(next(NUMBERS))["function"]
        return self.reply(None, (self.call("run_shell", function["arguments"], "c"),), self.usage)

    def count_tokens(self, messages: Any, tools: Any = None) -> int:
        return USAGE["prompt_tokens"]

    def price_per_token(self) -> tuple[float, float]:
        return 0.0, 0.0


def _direct(litellm: Any, options: dict[str, str], wire: str, stream: bool) -> None:
    """The same request sent by litellm itself through its own entry for ``wire`` (to the
    same chat-completions provider), every chunk or event read when streamed."""
    _, body = _request(wire, stream, next(NUMBERS))
    del body["model"]
    if wire == "chat":
        reply = litellm.completion(model=MODEL, **body, **options)
    elif wire == "anthropic":
        reply = litellm.anthropic.messages.create(model=MODEL, **body, **options)
    else:
        reply = litellm.responses(model=MODEL, use_chat_completions_api=True, **body, **options)
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


def _pairs(calls: dict[str, Callable[[], None]], pairs: int) -> dict[str, list[float]]:
    """Each call's CPU (ms) in each of ``pairs`` rounds, the calls of a round run back to
    back in an order that turns each round (each call first in turn)."""
    for _ in range(5):  # warm every path
        for call in calls.values():
            call()
    names = list(calls)
    runs: dict[str, list[float]] = {name: [] for name in names}
    for index in range(pairs):
        turn = index % len(names)
        for name in names[turn:] + names[:turn]:
            runs[name].append(_cpu(calls[name]))
    return runs


def _less(runs: list[float], signal: list[float]) -> list[float]:
    """Each round's figure without that round's signal to the client (the bench's, not the
    gateway's: a pipe write and read the direct call does not make)."""
    return [run - cost for run, cost in zip(runs, signal, strict=True)]


def _over(runs: list[float], base: list[float]) -> list[float]:
    return [run / cost for run, cost in zip(runs, base, strict=True)]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--provider"]:
        provider()
    elif sys.argv[1:2] == ["--client"]:
        HISTORY = int(sys.argv[3])
        client(int(sys.argv[2]))
    else:
        main()
