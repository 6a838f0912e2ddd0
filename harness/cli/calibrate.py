"""``harness calibrate``: the loop's critic setup judged against a person's labels."""

from __future__ import annotations

import argparse
import os
import sys

from harness.assemble.build_critic import loop_critic
from harness.assemble.named_models import MODEL_ENV, Overrides, author_model, configured_model
from harness.cli.exit_codes import EXIT_PASSED
from harness.core.errors import ConfigError
from harness.models.other_family import provider
from harness.models.preflight import preflight
from harness.spec import LoopSpec
from harness.verify.calibration import (
    Judged,
    calibrate,
    compared,
    read_examples,
    recorded_approvals,
)
from harness.verify.critic import Critic
from harness.verify.panel import Reviewer


def run_calibrate(config: LoopSpec, args: argparse.Namespace) -> int:
    if not args.examples and not args.approvals:
        raise ConfigError("calibrate: give --examples DIR or --approvals RUNS (or both)")
    examples = [e for folder in args.examples for e in read_examples(folder, config.goal)]
    for folder in args.approvals:
        found = recorded_approvals(folder)
        if not found:
            raise ConfigError(f"{folder}: no approved or rejected round with a critic's verdict")
        examples += found
    # The examples first: a mistake in them is told before any model is set up.
    overrides = Overrides(model=args.model, critic_model=args.critic_model)
    critic = loop_critic(config, overrides)
    if critic is None:
        raise ConfigError(f"{config.source}: field 'critic.enabled': the critic is disabled")

    def show(index: int, item: Judged) -> None:
        if not args.quiet:
            word = "accept" if item.accepted else "reject"
            verdict = "pass" if item.passed else "fail"
            print(
                f"[{index}/{len(examples)}] {item.name}: person {word}, critic {item.score:g} "
                f"{verdict}",
                file=sys.stderr,
                flush=True,
            )

    report = calibrate(
        critic.review, examples, threshold=critic.threshold, critic=critic.label, on_example=show
    )
    twin = _author_twin(config, overrides, critic)
    if twin is not None:  # the same setup on the author's model: the self-bias measured
        second = calibrate(
            twin.review, examples, threshold=twin.threshold, critic=twin.model.name, on_example=show
        )
        report = compared(report, second)
    print(report.model_dump_json(indent=2) if args.json else report.table())
    return EXIT_PASSED


def _author_twin(config: LoopSpec, overrides: Overrides, critic: Reviewer) -> Critic | None:
    """The loop's lone critic on the author's model, when it asks a model of another provider
    and the author's model can be called here; else None (nothing to compare)."""
    named = overrides.model or os.environ.get(MODEL_ENV) or configured_model(config)
    if not isinstance(critic, Critic) or not named:
        return None
    author = author_model(config, overrides)
    if author.name == critic.model.name or provider(author.name) == provider(critic.model.name):
        return None
    try:
        preflight([("model", author)])
    except ConfigError as exc:
        print(f"note: not compared with the author's model: {exc}", file=sys.stderr)
        return None
    return critic.for_run(author, critic.events)
