"""Reviews looked for on the host: the ``reviews`` trigger of ``harness watch``.

Every ``every`` seconds, the open pull request from each branch of the loop's runs is asked for
its reviews, inline comments and comments; those written after the run's last round was
committed are taken as a webhook's deliveries are (:func:`~harness.connect.reviews.review_of`),
each once per watcher. A review written before that commit was of earlier work; one written while
no watcher looked is still taken by the next.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import Any

from harness.connect.github import GitHub
from harness.connect.reviews import review_of
from harness.connect.triggers import Start

RunHeads = Callable[[], Mapping[str, datetime]]
"""Each branch of the loop's runs, with when its last round was committed."""


class ReviewsTrigger:
    """Reviews of the loop's own pull requests, by one of ``reviewers`` (see the module)."""

    kind = "reviews"

    def __init__(self, client: Callable[[], GitHub], runs: RunHeads, *,
                 reviewers: Collection[str], handle: str, every: float) -> None:  # fmt: skip
        self._client = client
        self._runs = runs
        self.reviewers = tuple(reviewers)
        self.handle = handle
        self.every = every
        self._seen: set[str] = set()  # event:id of each item looked at
        self._last: datetime | None = None

    def poll(self, now: datetime) -> list[Start]:
        if self._last is not None and (now - self._last).total_seconds() < self.every:
            return []
        self._last = now
        client = self._client()
        starts = []
        for branch, committed in self._runs().items():
            pull = client.find_pull(branch)
            if pull is None:
                continue
            for event, item in client.review_items(pull.number):
                key = f"{event}:{item.get('id')}"
                if key in self._seen:
                    continue
                self._seen.add(key)
                written = _when(item)
                if written is None or written <= committed:
                    continue  # of earlier work, or of no time the host says
                starts.append(self._start(event, item, pull.number))
        return starts

    def _start(self, event: str, item: dict[str, Any], pull: int) -> Start:
        kind = "review" if event == "pull_request_review" else "comment"
        target = {"number": pull, "pull_request": {}}
        action = "submitted" if event == "pull_request_review" else "created"
        data = {"action": action, kind: item, "issue": target, "pull_request": target}
        review = review_of(event, data, reviewers=self.reviewers, handle=self.handle)
        if isinstance(review, str):
            return Start(self.kind, ignored=f"{event} on #{pull}: {review}")
        return Start(self.kind, review=review)


def _when(item: dict[str, Any]) -> datetime | None:
    """When a review was submitted, or a comment made, as the host says (with a time zone)."""
    given = item.get("submitted_at") or item.get("created_at")
    try:
        found = datetime.fromisoformat(given) if isinstance(given, str) else None
    except ValueError:
        return None
    return found if found is not None and found.tzinfo is not None else None
