"""The benchmark's figures: resolve rate, cost per resolved instance, mean rounds, pass@k."""

from __future__ import annotations

import math

import pytest

from harness.core.errors import ConfigError
from harness.scale.batch_task import BatchTask
from harness.scale.side_by_side import compare, side_by_side_table
from harness.scale.swebench import attempt_name, attempt_tasks
from harness.scale.swebench_summary import InstanceResult, PassAtK, pass_at, summarise


def result(
    instance: str, attempt: int, resolved: bool, *, cost: float, rounds: int
) -> InstanceResult:
    return InstanceResult(
        instance_id=instance, attempt=attempt, resolved=resolved,
        status="passed" if resolved else "escalated", stop_reason=None, rounds=rounds, tokens=0,
        cost_usd=cost, seconds=1.0, branch=None, trajectory=None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("k", "estimate", "interval"),
    [(1, 0.5, (0.0783, 0.9217)), (2, 0.6667, (0.2047, 1.0)), (3, 0.75, (0.26, 1.0))],
)
def test_pass_at_k_is_the_unbiased_estimate_with_the_interval_of_a_mean(
    k: int, estimate: float, interval: tuple[float, float]
) -> None:
    # four instances, three attempts each, resolved 3, 1, 0 and 2 times
    assert pass_at([3, 1, 0, 2], 3, k) == PassAtK(k=k, estimate=estimate, interval=interval)


def test_pass_at_k_boundaries() -> None:
    assert pass_at([], 2, 1) == PassAtK(k=1, estimate=0.0, interval=(0.0, 0.0))
    assert pass_at([1], 1, 1) == PassAtK(k=1, estimate=1.0, interval=(0.0, 1.0))  # no spread
    assert pass_at([2, 2], 2, 2) == PassAtK(k=2, estimate=1.0, interval=(1.0, 1.0))
    assert pass_at([0, 0, 0], 4, 4) == PassAtK(k=4, estimate=0.0, interval=(0.0, 0.0))
    # one resolved attempt of n: pass@k is k/n (not 1, as "any of the n" would have it)
    assert pass_at([1, 1], 4, 2).estimate == 0.5
    assert math.comb(3, 2) / math.comb(4, 2) == 0.5


def test_the_summary_counts_first_attempts_and_charges_every_attempt() -> None:
    results = [
        result("a", 1, True, cost=0.5, rounds=1),
        result("a", 2, True, cost=0.25, rounds=2),
        result("b", 1, False, cost=1.0, rounds=3),
        result("b", 2, True, cost=0.25, rounds=2),
        result("c", 1, False, cost=0.5, rounds=3),
        # c's second attempt never ended: it counts as not resolved
    ]
    summary = summarise("m", ["a", "b", "c"], 2, results)
    assert summary.model_dump() == {
        "model": "m", "runner": "harness", "instances": 3, "attempts": 2, "ended": 5,
        "resolved": 1, "resolved_rate": 1 / 3, "interval": (0.0615, 0.7923),
        "cost_usd": 2.5, "cost_per_resolved": 0.833333, "mean_rounds": 2.2,
        "pass_at": [
            {"k": 1, "estimate": 0.5, "interval": (0.0, 1.0)},
            {"k": 2, "estimate": 0.6667, "interval": (0.0133, 1.0)},
        ],
        "seconds": 5.0,
    }  # fmt: skip
    assert summary.table().splitlines() == [
        "model       m",
        "resolved    1/3 (33.3%; 95% interval 6.2%-79.2%)",
        "ended       5/6 attempts",
        "cost        $2.5000 ($0.8333 per resolved instance)",
        "mean rounds 2.20",
        "pass        @1 50.0% (0.0%-100.0%), @2 66.7% (1.3%-100.0%)",
    ]


def test_nothing_resolved_has_no_cost_per_resolved_instance() -> None:
    summary = summarise("m", ["a", "b"], 1, [result("a", 1, False, cost=0.1, rounds=1)])
    assert (summary.resolved, summary.cost_per_resolved, summary.ended) == (0, None, 1)
    assert "(- per resolved instance)" in summary.table()
    assert summary.pass_at == [PassAtK(k=1, estimate=0.0, interval=(0.0, 0.0))]


def test_attempts_after_the_first_are_named_apart() -> None:
    assert [attempt_name("six-1", n) for n in (1, 2, 8)] == ["six-1", "six-1.2", "six-1.8"]


def test_attempts_share_the_prepared_task_and_a_name_too_long_for_them_is_refused() -> None:
    task = BatchTask(name="a" * 62, loop="/i/loop.toml", model="m", workspace="/i/repo")
    tasks = attempt_tasks(task, 3)
    assert [t.name for t in tasks] == ["a" * 62, "a" * 62 + ".2", "a" * 62 + ".3"]
    assert {(t.loop, t.model, t.workspace) for t in tasks} == {("/i/loop.toml", "m", "/i/repo")}
    assert attempt_tasks(task, 1) == [task]
    longer = task.model_copy(update={"name": "a" * 63})
    assert attempt_tasks(longer, 1) == [longer]  # one attempt keeps the id as it is
    with pytest.raises(
        ConfigError, match=r"^instance_id 'a{63}': too long for 2 attempts \(at most 62 "
    ):
        attempt_tasks(longer, 2)


def test_runners_side_by_side_are_one_line_each_with_their_figures() -> None:
    first = [result("a", 1, True, cost=0.5, rounds=1), result("b", 1, False, cost=0.25, rounds=3)]
    none = [result("a", 1, False, cost=0.1, rounds=2)]
    rows = compare(
        [*(r.model_copy(update={"runner": "harness"}) for r in first),
         *(r.model_copy(update={"runner": "claude-code"}) for r in none)],
    )  # fmt: skip
    assert side_by_side_table(rows, out_of=2).splitlines() == [
        "runner       resolved  tokens  cost     time  cost/resolved  time/resolved  rounds",
        "harness      1/2       0       $0.7500  2.0s  $0.7500        2.0s           2.00",
        "claude-code  0/2       0       $0.1000  1.0s  -              -              2.00",
    ]
