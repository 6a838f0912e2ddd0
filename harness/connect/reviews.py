"""Reviews of the harness's own pull requests, taken as the next round's feedback.

A ``pull_request_review`` that requests changes, or a ``pull_request_review_comment`` or an
``issue_comment`` on a pull request mentioning the handle (``@harness``), written by one of the
configured reviewers, is a :class:`Review`: the pull request's number, who wrote it and what
they wrote (bounded, inert). Everything else is ignored, with the reason. A delivery is data: it
names a pull request by number only; whether that pull request is one the loop opened is asked
of the host (:func:`own_branch`), never read from the delivery.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness.connect.github import GitHub, HostError, is_issue_number
from harness.core.text import inert, truncate

REVIEW_EVENTS = ("pull_request_review", "pull_request_review_comment", "issue_comment")
"""The webhook events that carry reviews and comments."""

MAX_REVIEW_CHARS = 4_000
"""The most of a review's text carried into a round (as its guidance, and kept in progress.md's
notes for the rounds after); a longer one keeps its head and tail."""

LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
"""The shape of a GitHub login (an app's ends in ``[bot]``)."""


@dataclass(frozen=True)
class Review:
    """A reviewer's word on pull request ``pull``: the next round's feedback."""

    pull: int
    author: str
    text: str
    kind: str  # changes requested, comment, inline comment (on path:line)
    review_id: int | None = None  # a review's own number (its inline comments are asked for)

    def note(self) -> str:
        """The note the next round reads (a reviewer's text, quoted as theirs)."""
        text = self.text or "(no text: the reviewer requested changes without saying which)"
        return (f"Review of pull request #{self.pull} by @{self.author} ({self.kind}); "
                f"address it in this round:\n\n{text}")  # fmt: skip


def mentions(text: str, handle: str) -> bool:
    """Whether ``text`` names ``handle`` (``@harness``) as a word, in any case (not
    ``@harness-bot``, ``x@harness.io`` or ``@harnessed``)."""
    pattern = rf"(?<![\w@.\-/]){re.escape(handle)}(?![\w\-]|\.\w)"
    return re.search(pattern, text, re.IGNORECASE) is not None


def review_of(event: str, data: Mapping[str, Any], *, reviewers: Collection[str],
              handle: str) -> Review | str:  # fmt: skip
    """The review a delivery of ``event`` carries, or why it is ignored."""
    comment = data.get("review" if event == "pull_request_review" else "comment")
    target = data.get("issue" if event == "issue_comment" else "pull_request")
    if not isinstance(comment, dict) or not isinstance(target, dict):
        return "the delivery holds no comment on a pull request"
    if event == "issue_comment" and not isinstance(target.get("pull_request"), dict):
        return "a comment on an issue, not on a pull request"
    number = target.get("number")
    if not is_issue_number(number):
        return "the delivery names no pull request number"
    wanted = "submitted" if event == "pull_request_review" else "created"
    if data.get("action") != wanted:
        return f"the comment was {str(data.get('action'))[:20]!r}, not {wanted}"
    user = comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    if not isinstance(login, str) or not LOGIN.fullmatch(login):
        return "the comment's author has no login"
    if login.casefold() not in {name.casefold() for name in reviewers}:
        return f"@{login} is not one of the reviewers"
    body = comment.get("body")
    text = inert(body).strip() if isinstance(body, str) else ""
    state = str(comment.get("state") or "").lower()
    if event == "pull_request_review" and state == "changes_requested":
        kind = "changes requested"
    elif not mentions(text, handle):
        return f"the comment does not mention {handle}"
    elif event == "pull_request_review_comment":
        kind = f"inline comment on {inert(str(comment.get('path') or '?'), multiline=False)[:200]}"
        if is_issue_number(comment.get("line")):
            kind += f":{comment['line']}"
    else:
        kind = "comment"
    own = comment.get("id") if event == "pull_request_review" else None
    review_id = own if is_issue_number(own) else None
    return Review(number, login, truncate(text, MAX_REVIEW_CHARS), kind, review_id)


def with_inline(review: Review, comments: list[dict[str, Any]]) -> Review:
    """``review`` with the inline comments that came with it (``path:line: text`` each) after its
    own text, bounded together."""
    lines = []
    for comment in comments:
        body = comment.get("body")
        if not isinstance(body, str) or not body.strip():
            continue
        where = inert(str(comment.get("path") or "?"), multiline=False)[:200]
        line = comment.get("line")
        where += f":{line}" if is_issue_number(line) else ""
        lines.append(f"- {where}: {inert(body).strip()}")
    text = review.text + ("\n\nInline comments:\n" + "\n".join(lines) if lines else "")
    return replace(review, text=truncate(text.strip(), MAX_REVIEW_CHARS))


def own_branch(client: GitHub, pull: int, branches: Collection[str]) -> str:
    """The branch of pull request ``pull`` as the host has it, when it is one of ``branches``
    (the runs' own) and the pull request open from it in this repository is ``pull`` itself (not
    a fork's of the same name); a :class:`HostError` saying why not otherwise."""
    found = client.pull(pull)
    if found.head_ref not in branches:
        raise HostError(f"pull request #{pull} is not from a branch of this loop's runs")
    mine = client.find_pull(found.head_ref)
    if mine is None or mine.number != pull:
        raise HostError(f"pull request #{pull} is not the open one from {found.head_ref}")
    return found.head_ref
