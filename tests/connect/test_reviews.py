"""What of a review delivery is taken: a reviewer's request for changes or mention of the handle
on a pull request, nothing else; and a pull request is the harness's only as the host says."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.connect.github import GitHub, HostError
from harness.connect.reviews import Review, mentions, own_branch, review_of, with_inline
from harness.core.errors import ConfigError
from harness.spec import LoopSpec
from tests.github_server import GitHubServer

REVIEWERS = ("Alice",)


def _inline(body: str, *, login: str = "alice", action: str = "created") -> dict[str, Any]:
    return {"action": action, "pull_request": {"number": 12},
            "comment": {"user": {"login": login}, "body": body, "path": "src/a.py",
                        "line": 40}}  # fmt: skip


def test_a_mention_of_the_handle_is_a_word_in_any_case() -> None:
    assert mentions("please @Harness, rename it", "@harness")
    assert mentions("@harness: rename it", "@harness")
    for text in ("@harness-bot rename", "mail x@harness.io", "@harnessed", "harness, rename"):
        assert not mentions(text, "@harness"), text


def test_an_inline_comment_mentioning_the_handle_says_where_it_is() -> None:
    review = review_of("pull_request_review_comment", _inline("@harness \x1b[2Jname it `total`"),
                       reviewers=REVIEWERS, handle="@harness")  # fmt: skip
    assert review == Review(12, "alice", "@harness name it `total`",
                            "inline comment on src/a.py:40")  # fmt: skip


def test_a_review_s_inline_comments_follow_its_text_and_an_empty_one_says_so() -> None:
    bare = Review(12, "alice", "", "changes requested", 55)
    assert bare.note().endswith(
        "\n\n(no text: the reviewer requested changes without saying which)"
    )
    comments = [{"path": "a.py", "line": 3, "body": "off by one"}, {"path": "b.py", "body": " "}]
    assert with_inline(bare, comments).text == "Inline comments:\n- a.py:3: off by one"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_inline("@harness x", action="deleted"), "the comment was 'deleted', not created"),
        (_inline("@harness x", login="mallory"), "@mallory is not one of the reviewers"),
        (_inline("@harness x", login="al ice"), "the comment's author has no login"),
        (_inline("looks fine"), "the comment does not mention @harness"),
        ({"action": "created", "pull_request": {"number": "12"}, "comment": {}},
         "the delivery names no pull request number"),
    ],
)  # fmt: skip
def test_what_is_not_a_reviewer_s_word_on_a_pull_request_is_ignored_with_its_reason(
    data: dict[str, Any], reason: str
) -> None:
    found = review_of("pull_request_review_comment", data, reviewers=REVIEWERS, handle="@harness")
    assert found == reason


def test_a_comment_on_an_issue_is_no_review() -> None:
    data = {"action": "created", "issue": {"number": 3},
            "comment": {"user": {"login": "alice"}, "body": "@harness fix"}}  # fmt: skip
    found = review_of("issue_comment", data, reviewers=REVIEWERS, handle="@harness")
    assert found == "a comment on an issue, not on a pull request"


def test_a_fork_s_pull_request_from_a_branch_of_the_same_name_is_not_the_harness_s() -> None:
    ours = "harness/tidy.1a2b3c4d.5e6f7a8b"
    pulls = [{"number": number, "state": "open", "head": {"ref": ref}, "base": {"ref": "main"}}
             for number, ref in ((100, ours), (9, ours), (11, "feature/x"))]  # fmt: skip
    with GitHubServer(token="t", pulls=pulls) as server:
        client = GitHub("acme/widgets", api_url=server.url, token="t")
        assert own_branch(client, 100, {ours}) == ours
        with pytest.raises(HostError, match=f"#9 is not the open one from {ours}"):
            own_branch(client, 9, {ours})
        with pytest.raises(HostError, match="#11 is not from a branch of this loop's runs"):
            own_branch(client, 11, {ours})


@pytest.mark.parametrize(
    ("fields", "github", "said"),
    [
        ('reviewers = ["al ice"]', True, "field 'triggers[0].reviewers[0]'"),
        ('reviewers = ["alice"]\nhandle = "harness"', True, "field 'triggers[0].handle'"),
        ('reviewers = ["alice"]', False, "field 'triggers[0].reviewers'"),
    ],
)
def test_review_settings_that_cannot_work_name_their_field(
    tmp_path: Path, fields: str, github: bool, said: str
) -> None:
    host = '[github]\nrepo = "acme/widgets"\n' if github else ""
    (tmp_path / "loop.toml").write_text(textwrap.dedent("""\
        goal = "g"
        [[gates]]
        type = "command"
        cmd = "true"
        """) + host + '[[triggers]]\ntype = "webhook"\n' + fields + "\n")  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        LoopSpec.from_toml(tmp_path / "loop.toml")
    assert said in str(caught.value)
