"""Token counting of a growing transcript: the first count of ~100k tokens vs counting it again.

Each message is tokenised once; a recount of the same history costs only cache lookups.
Run: python bench/token_count.py
"""

from __future__ import annotations

import statistics
import time

from harness.models.tokens import TokenCounter, count_text


def transcript(messages: int = 200) -> list[dict[str, str]]:
    words = "the agent read the file and ran the tests; two failed in parse_date with an off-by-one"
    return [
        {
            "role": "user" if i % 2 else "assistant",
            "content": f"step {i}: " + " ".join([words] * 28),
        }
        for i in range(messages)
    ]


def timed(fn: object, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    history = transcript()
    count_text("warm up the encoder")
    total = TokenCounter("gpt-4o-mini").count(history)
    first = timed(lambda: TokenCounter("gpt-4o-mini").count(history), 7)
    counter = TokenCounter("gpt-4o-mini")
    counter.count(history)
    again = timed(lambda: counter.count(history), 50)
    grown = list(history)

    def add_one_and_count() -> None:
        grown.append({"role": "user", "content": f"observation {len(grown)} " * 50})
        counter.count(grown)

    one_more = timed(add_one_and_count, 50)
    print(f"history: {len(history)} messages, {total:,} tokens")
    print(f"first count (every message tokenised)  median {statistics.median(first):8.2f} ms")
    print(f"count again (all cached)               median {statistics.median(again):8.3f} ms")
    print(f"count with one new message             median {statistics.median(one_more):8.3f} ms")
    print(
        f"ratio first / again                    {statistics.median(first) / statistics.median(again):8.0f}x"
    )


if __name__ == "__main__":
    main()
