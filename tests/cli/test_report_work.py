"""``harness report RUN --html`` shows the work: the run branch's diff against the commit the run
started from, read from the repository holding the run's folder. The branch is named by the
record, which is data: a name not of the run's own shape is not looked up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import harness
from tests.conftest import git, make_repo

LOOP_TOML = """\
name = "essay"
goal = "write the draft"
model = "scripted:script.json"
isolation = "worktree"
[critic]
enabled = false
[[gates]]
type = "command"
name = "draft"
cmd = "test -s work/draft.md"
"""


def passed_run(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository whose loop passed on its run branch writing work/draft.md; the repository,
    the run id and the branch."""
    write = {
        "name": "write_file",
        "arguments": {"path": "work/draft.md", "content": "two <b>words</b>\n"},
    }
    files = {
        "README.md": "notes\n",
        ".gitignore": ".harness/\nprogress/\n",
        "loop.toml": LOOP_TOML,
        "script.json": json.dumps([write, "done"]),
    }
    repo = make_repo(tmp_path / "repo", files)
    run = harness("run", "--quiet", cwd=repo)
    assert run.returncode == 0, run.stdout + run.stderr
    (run_dir,) = (repo / ".harness" / "runs").iterdir()
    branch = git(repo, "branch", "--list", "harness/*", "--format=%(refname:short)")
    return repo, run_dir.name, branch


def page(repo: Path, run_id: str) -> str:
    report = harness("report", run_id, "--html", "page.html", cwd=repo)
    assert report.returncode == 0, report.stderr
    return (repo / "page.html").read_text(encoding="utf-8")


def test_the_html_report_shows_the_run_branch_s_diff_against_its_base(tmp_path: Path) -> None:
    repo, run_id, branch = passed_run(tmp_path)

    html = page(repo, run_id)

    work = html[html.index("<h2>The work</h2>") :]
    assert work.startswith(f"<h2>The work</h2><p>Branch <code>{branch}</code> against the commit")
    assert "+++ b/work/draft.md\n@@ -0,0 +1 @@\n+two &lt;b&gt;words&lt;/b&gt;\n</pre>" in work
    assert "README.md" not in work  # only what the run changed
    assert "<b>words</b>" not in html  # escaped

    git(repo, "branch", "-D", branch)  # the work is gone: no section
    assert "<h2>The work</h2>" not in page(repo, run_id)


def test_a_recorded_branch_not_of_the_run_s_shape_is_not_looked_up(tmp_path: Path) -> None:
    repo, run_id, branch = passed_run(tmp_path)
    git(repo, "branch", "other", branch)  # even with a base of its own: another run's, say
    git(repo, "config", "branch.other.harnessBase", git(repo, "rev-parse", "main"))
    events = repo / ".harness" / "runs" / run_id / "events.jsonl"
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    for line in lines:
        if line["kind"] == "run_start":
            line["branch"] = "other"  # a branch of the repository, named by the record
    events.write_text("".join(json.dumps(line) + "\n" for line in lines))

    html = page(repo, run_id)

    assert "<br>branch <code>other</code>" in html  # shown as recorded
    assert "<h2>The work</h2>" not in html
    assert "+++ b/work/draft.md" not in html  # no diff of the branch it named


def test_the_work_is_redacted_as_its_loop_redacts_and_left_out_when_that_loop_cannot_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marked = "billing-" + "7f3a91c2e4"  # a secret only the loop's [redact] names
    repo, run_id, branch = passed_run(tmp_path)
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree), branch)
    (worktree / "work" / "draft.md").write_text(f"ref {marked}\n")
    git(worktree, "commit", "-qam", "the secret in the work")
    loop = repo / "loop.toml"
    loop.write_text(LOOP_TOML + '[redact]\nenv = ["BILLING_REF"]\n')
    monkeypatch.setenv("BILLING_REF", marked)

    html = page(repo, run_id)

    assert "+ref [REDACTED]\n" in html
    assert marked not in html

    loop.write_text(LOOP_TOML + "[redact]\nenv = 3\n")  # broken: what it names is not known
    html = page(repo, run_id)
    assert "<h2>The work</h2>" not in html
    assert marked not in html
