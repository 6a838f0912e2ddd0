"""A run with a scripted model says so as it starts: its replies are not a real model's."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import harness


def test_a_scripted_run_is_labelled_and_a_quiet_one_still_records_it(tmp_path: Path) -> None:
    (tmp_path / "loop.toml").write_text(
        'name = "hello"\ngoal = "say hello"\nmodel = "scripted:script.json"\n'
        'isolation = "none"\n[critic]\nenabled = false\n'
        '[[gates]]\ntype = "command"\ncmd = "true"\n'
    )
    (tmp_path / "script.json").write_text('["hello"]')

    result = harness("run", cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    label = "the model is scripted (scripted:"
    assert label in result.stderr
    assert "nothing is sent to a provider; --model NAME runs a real one" in result.stderr
    assert "the critic uses the author's model" not in result.stderr  # no critic here
