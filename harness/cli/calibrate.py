"""``harness calibrate``: the loop's critic setup judged against a person's labels."""

from __future__ import annotations

import argparse
import sys

from harness.assemble.build_critic import loop_critic
from harness.assemble.named_models import Overrides
from harness.cli.exit_codes import EXIT_PASSED
from harness.core.errors import ConfigError
from harness.spec import LoopSpec
from harness.verify.calibration import Judged, calibrate, read_examples, recorded_approvals


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
    critic = loop_critic(config, Overrides(model=args.model, critic_model=args.critic_model))
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
        critic.review,
        examples,
        threshold=critic.threshold,
        critic=critic.label,
        on_example=show,
    )
    print(report.model_dump_json(indent=2) if args.json else report.table())
    return EXIT_PASSED
