"""What redaction costs per agent step, on a long history, and the redactor's speed on text.

Every request to a model passes through a ``RequestRedactor`` (inside ``MeteredModel``). A
session of ``--steps`` steps is replayed: each step appends an assistant tool call and a tool
observation of ``--chars`` characters (source-like lines with commit ids, UUIDs, URLs and, every
tenth step, a secret) and redacts the whole request. Printed: the history's size, the median and
worst time per step with the cache (each message redacted once), and the same request redacted
from scratch (what a step would cost without the cache). Then the redactor's throughput on
plain text and on inputs that once made it rescan text once per character, and what a new short
text costs once the redactor's memo of recent texts is full and turns over.

    python bench/redact_cost.py [--steps 80] [--chars 4000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.core.redact import REMEMBERED_CHARS, Redactor  # noqa: E402
from harness.models.redaction import RequestRedactor  # noqa: E402
from harness.models.tokens import TokenCounter  # noqa: E402

SECRET = "canary-" + "9Xq2Lm7Wv4Tz"
LINES = (
    "    def step(self) -> tuple[AgentStop, str | None, str] | None:",
    "        reply = self.model.complete(self.messages, self.agent.toolbox.schemas())",
    "commit {sha} Merge branch 'feature/redaction' of https://github.com/org/repo",
    "2026-12-01 15:30:09 INFO run {uuid} step 12 read_file src/harness/models/budget.py",
    "+    assert result.stop_reason is StopReason.PASSED, result.message",
    "index 83db48f..bf269f4 100644",
    "See https://docs.example.com/guide/getting-started?page=2 for details.",
)


def observation(rng: random.Random, chars: int, secret: bool) -> str:
    lines: list[str] = []
    while sum(map(len, lines)) < chars:
        line = rng.choice(LINES).format(sha=f"{rng.getrandbits(160):040x}", uuid=uuid.uuid4())
        lines.append(line)
    if secret:
        lines.append(f"DATABASE_URL=postgres://app:{SECRET}@db/main")
    return "\n".join(lines)


def session(steps: int, chars: int) -> list[list[dict[str, Any]]]:
    """The message pairs each step appends."""
    rng = random.Random(7)
    pairs = []
    for step in range(steps):
        arguments = json.dumps({"path": f"src/m{step}.py", "start_line": step})
        call = {"id": f"c{step}", "type": "function",
                "function": {"name": "read_file", "arguments": arguments}}  # fmt: skip
        pairs.append([
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{step}", "content": observation(rng, chars, step % 10 == 0)},
        ])  # fmt: skip
    return pairs


def per_step(redact: Any, pairs: list[list[dict[str, Any]]]) -> tuple[list[float], float]:
    """Seconds each step's redaction took (cached), and the last request's redaction from
    scratch (a fresh cache: what every step would cost without one; median of 5)."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful engineer."},
        {"role": "user", "content": "Goal: make the tests pass."},
    ]
    requests = RequestRedactor(redact)
    times = []
    for pair in pairs:
        history.extend(pair)
        start = time.perf_counter()
        sent = requests.redact(history)
        times.append(time.perf_counter() - start)
    assert SECRET not in json.dumps(sent)
    scratch = []
    for _ in range(5):
        start = time.perf_counter()
        RequestRedactor(redact).redact(history)
        scratch.append(time.perf_counter() - start)
    return times, statistics.median(scratch)


def throughput(redactor: Redactor, text: str) -> float:
    start = time.perf_counter()
    redactor.redact_text(text)
    return time.perf_counter() - start


def new_short_texts(full: bool, count: int = 20_000) -> float:
    """Seconds per new short text (a tool call's arguments) redacted, the memo of recent texts
    empty or, with ``full``, filled first, so that each new text pushes the oldest out."""
    redactor = Redactor(env={})
    filler = 0
    while full and redactor.redact_text(f"filler {filler}") and filler * 80 < 2 * REMEMBERED_CHARS:
        filler += 1
    texts = [json.dumps({"path": f"src/m{n}.py", "start_line": n}) for n in range(count)]
    start = time.perf_counter()
    for text in texts:
        redactor.redact_text(text)
    return (time.perf_counter() - start) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--chars", type=int, default=4000)
    args = parser.parse_args()
    redactor = Redactor(env={"CANARY_API_KEY": SECRET, "DB_PASSWORD": "hunter2-hunter2"})
    pairs = session(args.steps, args.chars)
    history_chars = sum(len(json.dumps(m)) for pair in pairs for m in pair)
    tokens = TokenCounter("gpt-4o").count([m for pair in pairs for m in pair])
    print(f"history at the last step: {2 * args.steps + 2} messages, {history_chars:,} characters, "
          f"{tokens:,} tokens")  # fmt: skip

    cached, scratch = per_step(redactor.redact_text, pairs)
    print(f"per step, cached (each message once): median {statistics.median(cached) * 1e3:.2f} ms,"
          f" worst {max(cached) * 1e3:.2f} ms, last 20 steps median "
          f"{statistics.median(cached[-20:]) * 1e3:.2f} ms")  # fmt: skip
    print(f"the last request redacted from scratch (no cache): {scratch * 1e3:.1f} ms")

    rng = random.Random(1)
    code = observation(rng, 1_000_000, False)
    seconds = throughput(redactor, code)
    print(f"redact_text on {len(code):,} characters of log and code: {seconds * 1e3:.0f} ms "
          f"({len(code) / seconds / 1e6:.1f} M characters/s)")  # fmt: skip
    for name, text in {
        "100 000 letters in one run": "x" * 100_000,
        "'a://u:' then 20 000 letters": "a://u:" + "x" * 20_000,
        "'?' then 20 000 letters": "?" + "x" * 20_000,
        "3 000 private-key BEGIN lines, no END": "-----BEGIN RSA PRIVATE KEY-----\n" * 3_000,
    }.items():
        print(f"redact_text on {name}: {throughput(redactor, text) * 1e3:.1f} ms")
    print(f"a new short text: {new_short_texts(False) * 1e6:.1f} µs with room in the memo, "
          f"{new_short_texts(True) * 1e6:.1f} µs once it is full and turns over")  # fmt: skip


if __name__ == "__main__":
    main()
