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
# The agent may write only draft.md: facts.md and brief.md, which the checks and the reviewer
# trust, and everything else here are protected (its file tools refuse them, and a round that
# changes one through a shell command fails).
protect = ["**", "!draft.md"]

[[gates]]
type = "command"
name = "length"
cmd = "harness check content words --min 300 --max 600 draft.md"

[[gates]]
type = "command"
name = "no hype"
cmd = 'harness check content banned --phrase "world-class" --phrase "cutting-edge" --phrase "game-changing" draft.md'

# The facts the piece must carry, word for word (fill in your own):
# [[gates]]
# type = "command"
# name = "required facts"
# cmd = 'harness check content facts --require "12 April 2025" --require "Priya Nair" draft.md'

# A title and at least 3 sections; every link well-formed:
# [[gates]]
# type = "command"
# name = "structure"
# cmd = "harness check content structure --min-sections 3 draft.md"
# [[gates]]
# type = "command"
# name = "links"
# cmd = "harness check content links draft.md"

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
# The agent may write only findings.md: the sources the citation check quotes from, the
# question and everything else here are protected (its file tools refuse them, and a round that
# changes one through a shell command fails).
protect = ["**", "!findings.md"]

# Every quote must occur in the source it cites, and at least 3 sources must be cited.
[[gates]]
type = "command"
name = "citations"
cmd = "harness check citations findings.md --sources sources --min-sources 3"

# When the sources are known to disagree, also require a non-empty "## Contradictions" section:
# cmd = "harness check citations findings.md --sources sources --min-sources 3 --require-contradictions"

[critic]
# model = ["anthropic/claude-sonnet-4-5", "gpt-4.1-mini"]  # an independent critic: the first one set up is used
threshold = 8
artifact = "file"
file = "findings.md"

[budget]
cost_usd = 2.0
""",
}
