"""The figures of a benchmark run: each attempt's result, the resolve rate with its interval,
the cost, the rounds, and pass@k (``results.jsonl`` and ``bench.json``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from harness.scale.side_by_side import UNNAMED, RunnerFigures, side_by_side_table


class InstanceResult(BaseModel):
    """One line of ``results.jsonl``: how an instance ended."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    attempt: int
    runner: str = UNNAMED
    """What ran the attempt's sessions (``[agent] runner``)."""
    resolved: bool
    status: str
    stop_reason: str | None
    rounds: int
    tokens: int
    cost_usd: float
    seconds: float
    branch: str | None
    trajectory: str | None
    """The event log of the instance's last run (its full exchange is in ``trajs/``)."""


class PassAtK(BaseModel):
    """pass@k: the chance that at least one of k attempts resolves an instance, estimated
    without bias from all the attempts, with its 95 % interval over the instances."""

    model_config = ConfigDict(extra="forbid")

    k: int
    estimate: float
    interval: tuple[float, float]


class BenchSummary(BaseModel):
    """``bench.json``: the resolve rate with its 95 % interval, cost, rounds and pass@k.

    ``resolved`` counts the instances whose first attempt resolved them (the attempt
    ``preds.jsonl`` holds); ``ended``, ``cost_usd`` and ``mean_rounds`` count every attempt.
    """

    model_config = ConfigDict(extra="forbid")

    model: str
    """``model_name_or_path`` of the predictions: the model, with the runner when one was
    chosen (``codex+gpt-5``)."""
    runner: str = UNNAMED
    instances: int
    attempts: int
    ended: int
    resolved: int
    resolved_rate: float
    interval: tuple[float, float]
    cost_usd: float
    cost_per_resolved: float | None
    """The cost of every attempt over the number of attempts that resolved their instance."""
    mean_rounds: float
    pass_at: list[PassAtK]
    seconds: float = 0.0
    """Every attempt's duration, added up."""

    def table(self) -> str:
        low, high = self.interval
        per = "-" if self.cost_per_resolved is None else f"${self.cost_per_resolved:.4f}"
        passes = ", ".join(
            f"@{p.k} {p.estimate:.1%} ({p.interval[0]:.1%}-{p.interval[1]:.1%})"
            for p in self.pass_at
        )
        return "\n".join(
            [
                f"model       {self.model}",
                f"resolved    {self.resolved}/{self.instances} "
                f"({self.resolved_rate:.1%}; 95% interval {low:.1%}-{high:.1%})",
                f"ended       {self.ended}/{self.instances * self.attempts} attempts",
                f"cost        ${self.cost_usd:.4f} ({per} per resolved instance)",
                f"mean rounds {self.mean_rounds:.2f}",
                f"pass        {passes}",
            ]
        )


def summarise(
    model: str,
    ids: Sequence[str],
    attempts: int,
    results: Sequence[InstanceResult],
    *,
    runner: str = UNNAMED,
) -> BenchSummary:
    """The figures of ``results`` (the attempts that ended) over the instances ``ids``; an
    attempt that did not end counts as not resolved."""
    total = len(ids)
    resolved = sum(r.resolved for r in results if r.attempt == 1)
    resolved_attempts = sum(r.resolved for r in results)
    cost = sum(r.cost_usd for r in results)
    successes = {name: 0 for name in ids}
    for result in results:
        successes[result.instance_id] += result.resolved
    return BenchSummary(
        model=model,
        runner=runner,
        instances=total,
        attempts=attempts,
        ended=len(results),
        resolved=resolved,
        resolved_rate=resolved / total if total else 0.0,
        interval=wilson(resolved, total),
        cost_usd=round(cost, 6),
        cost_per_resolved=round(cost / resolved_attempts, 6) if resolved_attempts else None,
        mean_rounds=sum(r.rounds for r in results) / len(results) if results else 0.0,
        pass_at=[pass_at(list(successes.values()), attempts, k) for k in range(1, attempts + 1)],
        seconds=round(sum(r.seconds for r in results), 3),
    )


class SideBySide(BaseModel):
    """``bench.json`` of a benchmark run with several runners: each runner's figures over the
    same instances (:mod:`harness.scale.side_by_side`), and each one's own summary (also in
    ``<out>/<runner>/bench.json``)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    instances: int
    attempts: int
    """Attempts per instance and runner."""
    runners: list[RunnerFigures]
    summaries: list[BenchSummary]

    def table(self) -> str:
        """The model, then one row per runner: resolved of its attempts, tokens, cost, time,
        and cost and time per resolved instance."""
        each = f"{self.attempts} attempt{'s' if self.attempts > 1 else ''} per runner"
        return "\n".join(
            [
                f"model       {self.model}",
                f"instances   {self.instances} ({each})",
                "",
                side_by_side_table(self.runners, out_of=self.instances * self.attempts),
            ]
        )


def pass_at(successes: Sequence[int], attempts: int, k: int, z: float = 1.96) -> PassAtK:
    """pass@k over instances with ``successes[i]`` of ``attempts`` attempts resolved.

    Each instance's estimate is the unbiased ``1 - C(n - c, k) / C(n, k)``; the figure is their
    mean, with the normal interval of a mean (``z`` standard errors of the instances' sample
    standard deviation), clipped to [0, 1]; (0, 1) with fewer than two instances.
    """
    each = [1 - math.comb(attempts - c, k) / math.comb(attempts, k) for c in successes]
    if not each:
        return PassAtK(k=k, estimate=0.0, interval=(0.0, 0.0))
    mean = sum(each) / len(each)
    if len(each) < 2:
        return PassAtK(k=k, estimate=round(mean, 4), interval=(0.0, 1.0))
    spread = math.sqrt(sum((x - mean) ** 2 for x in each) / (len(each) - 1))
    half = z * spread / math.sqrt(len(each))
    interval = (round(max(0.0, mean - half), 4), round(min(1.0, mean + half), 4))
    return PassAtK(k=k, estimate=round(mean, 4), interval=interval)


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 % by default); (0, 0) with no trials."""
    if trials == 0:
        return (0.0, 0.0)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = (
        z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    )
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))
