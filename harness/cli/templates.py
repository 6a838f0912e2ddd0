"""What ``harness init`` writes: a loop.toml per kind of job."""

from __future__ import annotations

LOOP_TOML = {
    "bugfix": """\
# A bug-fix loop: the agent works until the test suite passes and a reviewer approves the diff.
name = "bugfix"
goal = "Make the test suite pass without editing the tests."
# model = "gpt-4o-mini"          # or set HARNESS_MODEL, or pass --model
skill = "skills/bugfix/SKILL.md"
workspace = "."
max_iterations = 10
isolation = "auto"                # in git: a branch and a worktree per run, your checkout untouched
checklist = ["reproduce the failure", "fix the cause", "run the whole suite"]

[agent]
max_steps = 40
compaction = "mask_observations"

[[gates]]
type = "pytest"
args = "-q tests"

[critic]
# model = ["anthropic/claude-sonnet-4-5", "gpt-4.1-mini"]  # an independent critic: the first one set up is used
threshold = 8
artifact = "diff"

[budget]
cost_usd = 2.0
seconds = 1800
""",
    "content": """\
# A draft-and-critique loop: objective checks first, then an independent reviewer.
name = "content"
goal = "Write draft.md from brief.md and facts.md."
skill = "skills/content/SKILL.md"
workspace = "."
max_iterations = 5
isolation = "none"

[[gates]]
type = "command"
name = "draft exists"
cmd = "test -s draft.md"

[critic]
# model = ["anthropic/claude-sonnet-4-5", "gpt-4.1-mini"]  # an independent critic: the first one set up is used
threshold = 8
artifact = "file"
file = "draft.md"

[budget]
cost_usd = 1.0
""",
    "research": """\
# A research loop: findings with quoted citations, checked against the sources.
name = "research"
goal = "Answer the question in question.md from the documents in sources/, citing them."
skill = "skills/research/SKILL.md"
workspace = "."
max_iterations = 6
isolation = "none"

[[gates]]
type = "command"
name = "findings exist"
cmd = "test -s findings.md"

[critic]
# model = ["anthropic/claude-sonnet-4-5", "gpt-4.1-mini"]  # an independent critic: the first one set up is used
threshold = 8
artifact = "file"
file = "findings.md"

[budget]
cost_usd = 2.0
""",
}
