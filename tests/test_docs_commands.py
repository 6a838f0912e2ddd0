"""Every command the documentation shows is run as written, or listed here with why it is not.

The shell blocks of README.md, examples/README.md and docs/*.md hold commands. Each one (each
part of an ``&&`` chain) that runs ``harness``, ``python`` or ``pip`` must be in
:data:`COMMANDS`: run by this module (:class:`Here`), run by a named test (:class:`By`), or
not runnable offline, with the reason (:class:`NotOffline`). Besides, every ``harness`` command
must parse with the real argument parser and name only paths that exist, and every
``pip install -e '.[extra]'`` must name an extra pyproject.toml defines. So a stale command (a
removed flag, a moved path, a renamed extra) fails here, and so does a new command nobody ran.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from harness.cli.main import build_parser
from tests.cli.test_examples import SCRATCH

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md")))
PROGRAMS = frozenset({"harness", "python", "python3", "pip"})
_BLOCK = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_HEREDOC = re.compile(r"<<'?(\w+)'?\s*$")
_PREFIX = re.compile(r"^(?:[A-Z_]+=\S*|nice)$")  # VAR=value and `nice` before the program
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]+$")  # RUN_ID: the reader fills it in
_EXTRAS = re.compile(r"\.\[([\w,-]+)\]")

Setup = Literal["root", "empty", "init", "content", "research", "block"]


@dataclass(frozen=True)
class Here:
    """Run by this module: in the repository (``root``, read-only commands), in an empty folder
    (``empty``) or one ``harness init bugfix`` made (``init``), beside an example's finished work (``content``,
    ``research``), or as the whole self-contained block it stands in (``block``)."""

    setup: Setup


@dataclass(frozen=True)
class By:
    """Run, as written, by the test ``file::name``."""

    test: str


@dataclass(frozen=True)
class NotOffline:
    """Not runnable in an offline test, and why."""

    reason: str


API_KEY = "calls a hosted model: needs its API key and the network"
LOCAL_SERVER = "calls a model server on localhost, which a test machine does not run"
INSTALLS = "installs from a package index (its extras are checked against pyproject.toml below)"
EXAMPLES = "tests/cli/test_examples.py::"

COMMANDS: dict[str, Here | By | NotOffline] = {
    # README.md
    "python3 -m venv .venv": NotOffline("creates a virtual environment (and pip's packages)"),
    "pip install -e '.[examples]'": NotOffline(INSTALLS),
    "pip install -e '.[dev]'": NotOffline(INSTALLS),
    "python -m pytest -n auto": NotOffline("the whole suite, which CI runs on its own"),
    "harness run examples/bugfix": By(EXAMPLES + "test_bugfix_runs_in_place_as_the_readme_says"),
    "harness run examples/content": By(EXAMPLES + "test_content_draft_passes_every_check_after_one_critique"),
    "harness run examples/research": By(EXAMPLES + "test_research_findings_cite_verified_quotes_after_the_gate_fails_once"),
    "harness run examples/web-research": By("tests/cli/test_example_web.py::test_web_research_reads_the_page_and_passes_in_two_rounds"),
    "harness run examples/bugfix --restart --model gpt-4o-mini": NotOffline(API_KEY),
    "harness init bugfix": Here("empty"),
    "harness run --model gpt-4o-mini": NotOffline(API_KEY),
    "harness status": Here("init"),
    "harness runs": Here("init"),
    "harness restore": By("tests/outer/test_best_round.py::test_a_git_loop_that_regresses_names_round_2_and_restores_its_files"),
    "harness report RUN_ID --html report.html": By("tests/cli/test_cli_conventions.py::test_report_html_is_written_even_when_the_reader_stops_early"),
    "harness clean": Here("init"),
    "harness clean --dry-run": Here("init"),
    "OPENAI_API_BASE=http://localhost:8000/v1 OPENAI_API_KEY=none harness run --model openai/qwen2.5-coder": By("tests/cli/test_readme_first_screen.py::test_the_readme_s_own_project_block_runs_a_project_with_a_local_model"),
    "python bench/help_time.py": NotOffline("a benchmark: it times ten starts, and bench/ scripts are run by hand, not as tests"),
    # examples/README.md
    "harness status examples/bugfix": Here("root"),
    "harness runs examples/bugfix": Here("root"),
    "harness report RUN_ID --root examples/bugfix": By("tests/cli/test_cli_conventions.py::test_the_text_report_counts_tool_calls_under_that_name"),
    "harness check content words --min 200 --max 350 .harness/work/draft.md": Here("content"),
    'harness check content facts --require "12 April 2025" --require "Priya Nair" .harness/work/draft.md': Here("content"),
    'harness check content banned --phrase "world-class" .harness/work/draft.md': Here("content"),
    "harness check content structure --min-sections 3 .harness/work/draft.md": Here("content"),
    "harness check content links .harness/work/draft.md": Here("content"),
    "harness check citations .harness/work/findings.md --sources sources --min-sources 4 --require-contradictions": Here("research"),
    "python examples/web-research/serve.py &": By("tests/cli/test_example_web.py::test_web_research_reads_the_page_and_passes_in_two_rounds"),
    "harness run examples/content --restart --model anthropic/claude-sonnet-4-5": NotOffline(API_KEY),
    "harness run examples/research --restart --model gpt-4o-mini --critic-model anthropic/claude-sonnet-4-5": NotOffline(API_KEY),
    "OPENAI_API_BASE=http://localhost:8000/v1 OPENAI_API_KEY=none harness run examples/bugfix --restart --model openai/qwen2.5-coder": NotOffline(LOCAL_SERVER),
    "OLLAMA_API_BASE=http://localhost:11434 harness run examples/bugfix --restart --model ollama_chat/llama3.1": NotOffline(LOCAL_SERVER),
    # docs/
    "harness restore --round 3": By("tests/outer/test_best_round.py::test_a_git_loop_that_regresses_names_round_2_and_restores_its_files"),
    'harness note . "the flaky test in tests/test_io.py is known; do not touch it"': Here("init"),
    "harness batch tasks.jsonl --workers 3 --out batch-out": Here("block"),
    "harness report batch-out": Here("block"),
    "pip install -e '.[ray]'": NotOffline(INSTALLS),
    "python3 -m venv /opt/harness-agents/aider": NotOffline(INSTALLS),  # .ci/run installs it
    "python3 -m venv /opt/harness-agents/mini-swe-agent": NotOffline(INSTALLS),  # .ci/run installs it
    "harness bench swebench instances.jsonl --repos ~/mirrors --model gold": By("tests/realworld/test_swebench.py::test_gold_resolves_every_instance_and_a_killed_benchmark_reruns_each_once"),
    "harness bench swebench instances.jsonl --repos ~/mirrors --model empty": By("tests/realworld/test_swebench.py::test_empty_resolves_none"),
    "harness bench swebench instances.jsonl --repos ~/mirrors --model openai/gpt-4.1 --workers 4": NotOffline("calls a real model"),
    "harness batch tasks.jsonl --backend ray --workers 16": NotOffline("starts a Ray cluster (harness[ray]); tests/scale/test_ray_backend.py runs Ray in-process"),
    "harness batch tasks.jsonl --backend ray --ray-address ray://head:10001": NotOffline("joins a Ray cluster at a remote address"),
    "harness watch --once": By("tests/cli/test_watch_github.py::test_a_labelled_issue_becomes_a_pull_request_that_ci_sends_back_once"),
    "python -m pytest -q tests/engine": NotOffline("a part of the suite, which CI runs on its own"),
    "nice python -m pytest -q -n auto": NotOffline("the whole suite, which CI runs on its own"),
    "nice python bench/mutation.py": NotOffline("a mutation run takes minutes to hours (docs/testing.md); not in CI"),
    "nice python bench/mutation.py budget": NotOffline("a mutation run takes minutes (docs/testing.md); not in CI"),
    "nice python bench/mutation.py redact budget": NotOffline("a mutation run takes minutes (docs/testing.md); not in CI"),
    "nice python bench/mutation.py condition --list": NotOffline("a mutation run of one module (it lists every mutant's fate): minutes; not in CI"),
    "nice python bench/mutation.py decision --tests tests/outer": NotOffline("a mutation run takes minutes (docs/testing.md); not in CI"),
    "nice python bench/mutation.py gates --recheck old.txt": NotOffline("needs old.txt, the survivors of an earlier mutation run"),
    "nice python bench/mutation.py --jobs 2": NotOffline("a mutation run of every module takes hours; not in CI"),
    "harness show RUN_ID --round 1": By("tests/cli/test_show_replay_cli.py::test_show_prints_each_step_of_a_round"),
    "harness replay RUN_ID": By("tests/cli/test_show_replay_cli.py::test_show_and_replay_do_not_load_litellm"),
    "harness replay tests/recorded/RUN_ID --repo .": By("tests/cli/test_show_replay_cli.py::test_a_recording_kept_in_the_tests_replays_in_another_clone"),
    "harness replay RUN_ID --live": By("tests/cli/test_replay_live.py::test_the_live_model_answers_from_the_diverging_observation_on"),
}  # fmt: skip


@dataclass(frozen=True)
class Shown:
    """A command as a page shows it: where, the text, and the block it stands in."""

    page: Path
    line: int
    text: str
    block: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def words(self) -> list[str]:
        """The command's words from the program on: variables and ``nice`` left out."""
        words = shlex.split(self.text.removesuffix("&").strip())
        while words and _PREFIX.match(words[0]):
            words = words[1:]
        return words


def shown_commands() -> list[Shown]:
    """Every ``harness``/``python``/``pip`` command in a shell block of the pages."""
    found: list[Shown] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in _BLOCK.finditer(text):
            first_line = text.count("\n", 0, block.start(1)) + 1
            heredoc_end = None
            for offset, line in enumerate(block[1].splitlines()):
                if heredoc_end is not None:  # a file's content written by `cat <<EOF`
                    heredoc_end = None if line.strip() == heredoc_end else heredoc_end
                    continue
                if match := _HEREDOC.search(line):
                    heredoc_end = match[1]
                command = re.sub(r"\s+#.*$", "", line).strip()
                for part in command.split("&&"):
                    shown = Shown(page, first_line + offset, part.strip(), block[1])
                    if part.strip() and shown.words and shown.words[0] in PROGRAMS:
                        found.append(shown)
    return found


SHOWN = shown_commands()


def made_on(page: Path) -> set[str]:
    """The files and folders a page's commands make (``cat > FILE``, ``--out DIR``): a later
    command that names one is checked by running the block that makes it."""
    text = page.read_text(encoding="utf-8")
    return set(re.findall(r"(?:cat >|--out) (\S+)", text))


def named(shown: Shown) -> str:
    return f"{shown.where} {shown.text}"[:90]


def test_every_command_shown_is_run_or_says_why_not() -> None:
    unaccounted = [f"{c.where}: {c.text}" for c in SHOWN if c.text not in COMMANDS]
    assert unaccounted == [], "run these in a test, or list them in COMMANDS with a reason"
    gone = sorted(set(COMMANDS) - {c.text for c in SHOWN})
    assert gone == [], "no page shows these any more: drop them from COMMANDS"
    assert len(SHOWN) >= 50  # the pages' blocks were read, not skipped


def test_the_tests_named_as_running_a_command_exist() -> None:
    for command, how in COMMANDS.items():
        if isinstance(how, By):
            file, name = how.test.split("::")
            assert f"def {name}(" in (ROOT / file).read_text(encoding="utf-8"), (command, how)


@pytest.mark.parametrize("shown", [c for c in SHOWN if c.words[0] == "harness"], ids=named)
def test_a_harness_command_parses_and_names_paths_that_exist(shown: Shown) -> None:
    with contextlib.redirect_stderr(io.StringIO()) as said:
        try:
            args = build_parser().parse_args(shown.words[1:])
        except SystemExit:
            pytest.fail(f"{shown.where}: {shown.text}: {said.getvalue().strip()}")
    named = [getattr(args, name, None) for name in ("path", "root", "tasks")]
    named += [args.run] if args.command == "report" else []
    for path in named:
        if path is None or _PLACEHOLDER.match(str(path)) or str(path) in made_on(shown.page):
            continue
        assert (ROOT / path).exists(), f"{shown.where}: {shown.text}: {path} does not exist"


def test_every_extra_a_pip_command_names_is_defined() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pages = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    named = {
        extra
        for found in re.findall(r"pip install -e '" + _EXTRAS.pattern + "'", pages)
        for extra in found.split(",")
        if not _PLACEHOLDER.match(extra)  # '.[EXTRA]' in prose stands for any of them
    }
    assert named >= {"examples", "dev", "ray"}
    assert named - set(extras) == set()


def shim(folder: Path) -> dict[str, str]:
    """An environment whose PATH finds ``harness`` (this checkout) and this test's Python."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    (bin_dir / "harness").write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -m harness.cli.main "$@"\n'
    )
    (bin_dir / "harness").chmod(0o755)
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # as a user runs it
    env["PATH"] = path
    env.pop("HARNESS_MODEL", None)
    return env


def last_write(example: str, file: str) -> str:
    """What the example's scripted model last writes to ``file``: its finished work."""
    script = json.loads((ROOT / "examples" / example / "scripted-trajectory.json").read_text())
    calls: list[dict[str, Any]] = []
    for entries in script["rounds"].values():
        for entry in entries:
            if isinstance(entry, dict):
                calls += [entry, *entry.get("tool_calls", [])]
    (text,) = [c["arguments"]["content"] for c in calls if c.get("name") == "write_file"
               and c["arguments"]["path"].endswith(file)][-1:]  # fmt: skip
    return str(text)


def prepare(setup: Setup, tmp_path: Path, env: dict[str, str]) -> Path:
    """The folder a command of ``setup`` runs in, made ready."""
    if setup == "root":
        return ROOT
    if setup == "init":
        folder = tmp_path / "project"
        folder.mkdir()
        subprocess.run(["harness", "init", "bugfix"], cwd=folder, env=env, check=True,
                       capture_output=True)  # fmt: skip
        return folder
    if setup in ("block", "empty"):
        return tmp_path
    folder = tmp_path / setup
    shutil.copytree(ROOT / "examples" / setup, folder, ignore=SCRATCH)  # not a run's .harness/
    work = {"content": "draft.md", "research": "findings.md"}[setup]
    (folder / ".harness" / "work").mkdir(parents=True)
    (folder / ".harness" / "work" / work).write_text(last_write(setup, work))
    return folder


def to_run() -> list[Shown]:
    """The commands this module runs: each text once, and a block once for all it holds."""
    seen: dict[str, Shown] = {}
    for shown in SHOWN:
        how = COMMANDS.get(shown.text)
        if isinstance(how, Here):
            seen.setdefault(shown.block if how.setup == "block" else shown.text, shown)
    return list(seen.values())


@pytest.mark.parametrize("shown", to_run(), ids=named)
def test_a_command_runs_as_written(shown: Shown, tmp_path: Path) -> None:
    how = COMMANDS[shown.text]
    assert isinstance(how, Here)
    env = shim(tmp_path)
    folder = prepare(how.setup, tmp_path, env)
    script = shown.block if how.setup == "block" else shown.text
    done = subprocess.run(["bash", "-e", "-c", script], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, f"{shown.where}: {shown.text}\n{done.stdout}\n{done.stderr}"
