"""Replay one long scripted session under each compaction strategy and compare.

The real :class:`~harness.agent.agent.Agent` runs a :class:`~harness.models.scripted.ScriptedModel` through
``--steps`` tool calls (``read_file`` on generated modules, ``run_shell`` on generated logs,
some of which fail) in a temporary workspace, so every observation is real tool output of about
2,000 tokens. Three facts are planted: the goal (the task), a decision at step 5 and an
unfinished item at step 12. For each strategy the benchmark prints the prompt tokens sent
(summary requests included) against the ``none`` baseline, the peak context of the agent's
requests, and whether each planted fact is still in the final context.

Summaries come from a SCRIPTED SUMMARISER, not a language model: it copies every line of the
summary request that states the goal, a decision or an unfinished item. It stands in for a
faithful summary; it measures the compaction machinery, not a model's summarising skill.

Run from the repository root: ``python -m bench.compaction [--steps 64] [--window 32000]``.
Peak context counts the tool schemas too, which the compaction trigger leaves to its headroom.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.agent.agent import Agent
from harness.agent.compaction import Compaction, MaskObservations, NoCompaction, Summarize
from harness.agent.summary_prompt import SUMMARY_HEADER, SUMMARY_INSTRUCTION
from harness.models.base import Message, Reply, ToolCall
from harness.models.scripted import ScriptedModel

GOAL = "Migrate the billing service to the JSON invoice schema (ticket BILL-4127)."
DECISION = "DECISION: keep the XML reader behind the flag billing.xml_fallback until v3.2."
UNFINISHED = "UNFINISHED: src/billing/totals.py still rounds with float; switch to Decimal."
FACTS = {"goal": GOAL, "decision@5": DECISION, "unfinished@12": UNFINISHED}
PLANTED = {5: DECISION, 12: UNFINISHED}
MARKERS = ("BILL-4127", "DECISION:", "UNFINISHED:")


def make_workspace(root: Path, steps: int) -> None:
    """Modules of ~120 lines and logs of ~90 lines: about 2,000 tokens per observation."""
    (root / "src").mkdir()
    (root / "logs").mkdir()
    for i in range(steps):
        module = [f'"""Invoice rules, part {i}."""', ""]
        for j in range(60):
            module.append(f"def rule_{i}_{j}(invoice, rate):")
            module.append(f"    return round(invoice.amount_{j} * rate + {i * j} / 7, {j % 4})")
        (root / "src" / f"rules_{i:02}.py").write_text("\n".join(module) + "\n")
        log = [
            f"{i:02}:{k:02} INFO parsed invoice INV-{i}{k:04} total={i * k / 3:.2f}"
            for k in range(90)
        ]
        (root / "logs" / f"import_{i:02}.log").write_text("\n".join(log) + "\n")


def action(step: int) -> ToolCall:
    if step % 2:
        return ToolCall(
            "run_shell", {"command": f"cat logs/import_{step:02}.log; exit {step % 3 == 0:d}"}
        )
    return ToolCall("read_file", {"path": f"src/rules_{step:02}.py"})


def scripted_summary(request: list[Message]) -> str:
    """The SCRIPTED SUMMARISER: every line that states the goal, a decision or unfinished work."""
    kept: dict[str, None] = {}
    for line in str(request[-1]["content"]).splitlines():
        if any(marker in line for marker in MARKERS):
            kept.setdefault(line.strip(), None)
    return "Scripted summary (goal, decisions, unfinished work):\n" + "\n".join(kept)


def author(steps: int) -> Callable[[list[Message], list[object]], Reply | str]:
    """One reply per agent step, or a summary when the request is a summary request."""
    done = 0

    def reply(messages: list[Message], tools: list[object]) -> Reply | str:
        nonlocal done
        if messages[0]["content"] == SUMMARY_INSTRUCTION:
            return scripted_summary(messages)
        done += 1
        if done > steps:
            return "All steps done."
        thought = PLANTED.get(done, f"Step {done}: checking the next part.")
        return Reply(content=thought, tool_calls=(action(done),))

    return reply


@dataclass(frozen=True)
class Result:
    label: str
    prompt_tokens: int
    peak_context: int
    summary_calls: int
    compactions: int
    steps: int
    stop: str
    facts: dict[str, str]  # fact -> "verbatim", "summary" or "MISSING"


def where(fact: str, context: list[Message]) -> str:
    """Whether ``fact`` is in the final context, and in which kind of message."""
    for message in context:
        content = str(message.get("content") or "")
        if fact in content:
            return "summary" if content.startswith(SUMMARY_HEADER) else "verbatim"
    return "MISSING"


def replay(label: str, compaction: Compaction, steps: int, window: int) -> Result:
    model = ScriptedModel([author(steps)] * (steps * 3), context_window=window)
    agent = Agent(model, compaction=compaction, max_steps=steps + 1)
    with tempfile.TemporaryDirectory() as folder:
        make_workspace(Path(folder), steps + 1)
        run = agent.run(GOAL, workspace=folder)
    summaries = [c for c in model.calls if c.messages[0]["content"] == SUMMARY_INSTRUCTION]
    agent_calls = [c for c in model.calls if c not in summaries]
    return Result(
        label,
        prompt_tokens=run.usage.prompt_tokens,
        peak_context=max(model.count_tokens(c.messages, c.tools) for c in agent_calls),
        summary_calls=len(summaries),
        compactions=len(getattr(compaction, "records", ())),
        steps=run.steps,
        stop=str(run.stop_reason),
        facts={name: where(fact, run.messages) for name, fact in FACTS.items()},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=64, help="tool-calling steps (default 64)")
    parser.add_argument("--window", type=int, default=32_000, help="model input window in tokens")
    options = parser.parse_args()
    strategies: list[tuple[str, Compaction]] = [
        ("none", NoCompaction()),
        ("mask_observations", MaskObservations()),
        ("summarize", Summarize()),
        ("summarize soft=0.4", Summarize(soft_threshold=0.4)),
    ]
    results = [replay(label, c, options.steps, options.window) for label, c in strategies]
    baseline = results[0].prompt_tokens
    print(f"{options.steps} steps, window {options.window:,} tokens, trigger at 80 %, keep_last 6")
    print("summaries by the SCRIPTED SUMMARISER (keeps goal/decision/unfinished lines)\n")
    header = f"{'strategy':<20}{'prompt tokens':>15}{'vs none':>9}{'peak ctx':>10}{'summ.':>7}"
    print(header + f"{'compact.':>10}{'steps':>7}  {'stop':<10} facts kept")
    for r in results:
        facts = " ".join(f"{name}={place}" for name, place in r.facts.items())
        print(
            f"{r.label:<20}{r.prompt_tokens:>15,}{r.prompt_tokens / baseline:>9.1%}"
            f"{r.peak_context:>10,}{r.summary_calls:>7}{r.compactions:>10}{r.steps:>7}"
            f"  {r.stop:<10} {facts}"
        )
    targets = [r for r in results if r.label in ("mask_observations", "summarize")]
    met = all(
        r.prompt_tokens <= baseline / 2 and "MISSING" not in r.facts.values() for r in targets
    )
    print(
        f"\ntarget (mask_observations and summarize <= 50 % of none, every fact kept): "
        f"{'met' if met else 'NOT MET'}"
    )
    if results[0].peak_context > options.window:
        print(
            f"none peaks above the {options.window:,}-token window: a real model would refuse it."
        )
    if not met:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
