"""Objective checks for a written piece: length, required facts, banned phrases, structure, links.

Each check is a pure function of the text that returns a :class:`CheckResult` ``(passed,
message)``. The command line runs one check on a file, for use as a command gate::

    harness check content words --min 150 --max 400 draft.md
    harness check content facts --require "12 April" --require "Priya Nair" draft.md
    harness check content banned --phrase "world-class" draft.md
    harness check content structure --min-sections 2 draft.md
    harness check content links draft.md

It exits 0 when the check passes, 1 when it fails and 2 when the file cannot be read; the last
line it prints says which, and why.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from harness.checks.markdown import (
    EXIT_FAILED,
    EXIT_PASSED,
    EXIT_UNREADABLE,
    headings,
    parse_heading,
    prose_lines,
    read_text,
    section_body,
)
from harness.core.errors import ConfigError

_INLINE_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^)\n]*)\)?")
_AUTOLINK = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*)>")
_REFERENCE_LINK = re.compile(r"\[([^\]\n]+)\]\[([^\]\n]*)\]")
_REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[([^\]\n]+)\]:\s*(\S+)")
_WORD = re.compile(r"[^\W_]", re.UNICODE)
_SCHEMES_WITH_HOST = ("http", "https")


class CheckResult(NamedTuple):
    """Whether a check passed, and a one-line message that says what it found."""

    passed: bool
    message: str


def word_count(text: str) -> int:
    """Words of the body text: headings, code fences and link targets are not counted.

    A word is a run of non-space characters holding at least one letter or digit, so a lone
    ``-`` or ``*`` of Markdown is not a word; ``£1.2`` and ``step-free`` are one word each.
    """
    count = 0
    for _, line in prose_lines(text):
        if parse_heading(line):
            continue
        line = _INLINE_LINK.sub(lambda m: m.group(2), line)
        count += sum(1 for token in line.split() if _WORD.search(token))
    return count


def check_words(
    text: str, *, min_words: int | None = None, max_words: int | None = None
) -> CheckResult:
    """The body has between ``min_words`` and ``max_words`` words (either bound optional)."""
    count = word_count(text)
    wanted = _describe_range(min_words, max_words)
    if min_words is not None and count < min_words:
        return CheckResult(False, f"{count} words; needs {wanted}: add {min_words - count}")
    if max_words is not None and count > max_words:
        return CheckResult(False, f"{count} words; needs {wanted}: cut {count - max_words}")
    return CheckResult(True, f"{count} words ({wanted})")


def check_facts(text: str, required: Sequence[str]) -> CheckResult:
    """Every phrase in ``required`` appears (case and runs of whitespace ignored)."""
    haystack = _normalise(text)
    missing = [phrase for phrase in required if _normalise(phrase) not in haystack]
    if missing:
        listed = "; ".join(repr(phrase) for phrase in missing)
        return CheckResult(
            False, f"{len(missing)} of {len(required)} required facts missing: {listed}"
        )
    return CheckResult(True, f"all {len(required)} required facts present")


def check_banned(text: str, phrases: Sequence[str]) -> CheckResult:
    """None of ``phrases`` appears as a whole word or words (case ignored)."""
    found: list[str] = []
    for phrase in phrases:
        words = r"\s+".join(map(re.escape, phrase.split()))
        pattern = re.compile(rf"(?<!\w){words}(?!\w)", re.IGNORECASE)
        starts = dict.fromkeys(text.count("\n", 0, m.start()) + 1 for m in pattern.finditer(text))
        lines = [str(number) for number in starts]
        if lines:
            found.append(f"{phrase!r} (line {', '.join(lines)})")
    if found:
        return CheckResult(False, f"banned phrases used: {'; '.join(found)}")
    return CheckResult(True, f"none of {len(phrases)} banned phrases used")


def check_structure(text: str, *, min_sections: int = 1) -> CheckResult:
    """One H1 title before everything else, then at least ``min_sections`` non-empty H2 sections."""
    found_headings = list(headings(text))
    titles = [h for h in found_headings if h.level == 1]
    if len(titles) != 1:
        where = ", ".join(f"line {h.line}" for h in titles)
        found = f"found {len(titles)}" + (f" ({where})" if where else "")
        return CheckResult(False, f"needs exactly one H1 title ('# ...'), {found}")
    first_prose = next((n for n, line in prose_lines(text) if line.strip()), 0)
    if titles[0].line != first_prose:
        return CheckResult(False, f"the H1 title (line {titles[0].line}) must come first")
    sections = [h for h in found_headings if h.level == 2]
    empty = [f"{h.title!r} (line {h.line})" for h in sections if not section_body(text, h)]
    if empty:
        return CheckResult(False, f"empty sections: {', '.join(empty)}")
    if len(sections) < min_sections:
        return CheckResult(False, f"{len(sections)} '## ' sections; needs at least {min_sections}")
    return CheckResult(True, f"one title and {len(sections)} sections")


def check_links(text: str) -> CheckResult:
    """Every link has text and a well-formed target; reference links have a definition."""
    problems: list[str] = []
    definitions = {
        m.group(1).casefold(): m.group(2)
        for _, line in prose_lines(text)
        if (m := _REFERENCE_DEFINITION.match(line))
    }
    count = 0
    for number, line in prose_lines(text):
        found = [(link, _link_problem(link)) for link in _INLINE_LINK.finditer(line)]
        found += [(link, _target_problem(link.group(1))) for link in _AUTOLINK.finditer(line)]
        for link in _REFERENCE_LINK.finditer(line):
            ref = (link.group(2) or link.group(1)).casefold()
            found.append((link, "" if ref in definitions else f"has no [{ref}]: definition"))
        count += len(found)
        problems += [
            f"line {number}: {link.group(0)!r} {problem}" for link, problem in found if problem
        ]
    for ref, target in definitions.items():
        if problem := _target_problem(target):
            problems.append(f"definition [{ref}]: {target!r} {problem}")
    if problems:
        return CheckResult(False, f"{len(problems)} malformed link(s): {'; '.join(problems)}")
    return CheckResult(True, f"{count} link(s), all well-formed")


def _link_problem(link: re.Match[str]) -> str:
    """Why the inline link (or image) ``link`` is malformed, or ``""``."""
    image, label, target = link.groups()
    if not link.group(0).endswith(")"):
        return "is not closed with ')'"
    if not label.strip() and not image:
        return "has no link text"
    destination, _, title = target.strip().partition(" ")
    return _target_problem(destination if title.startswith(('"', "'")) else target.strip())


def _target_problem(target: str) -> str:
    """Why ``target`` is not a usable link target, or ``""``."""
    if not target:
        return "has an empty target"
    if any(char.isspace() for char in target):
        return "has a space in its target"
    parts = urlsplit(target)
    if parts.scheme in _SCHEMES_WITH_HOST:
        if not parts.netloc:
            return "has no host in its URL"
        if "." not in parts.netloc and parts.netloc != "localhost":
            return f"has an incomplete host {parts.netloc!r}"
    if parts.scheme == "mailto" and "@" not in parts.path:
        return "has no address after mailto:"
    if not parts.scheme and target.startswith("www."):
        return "lacks its scheme (https://)"
    return ""


def _normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


def _describe_range(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"{low}-{high}"
    return f"at least {low}" if low is not None else f"at most {high}"


# --- command line ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness check content",
        description="Check a Markdown file; exit 0 if it passes, 1 if not, 2 if it cannot be read.",
    )
    checks = parser.add_subparsers(dest="check", required=True, metavar="CHECK")
    words = checks.add_parser("words", help="word count of the body within a range")
    words.add_argument("--min", type=int, dest="min_words")
    words.add_argument("--max", type=int, dest="max_words")
    facts = checks.add_parser("facts", help="required phrases present")
    facts.add_argument("--require", action="append", required=True, metavar="PHRASE")
    banned = checks.add_parser("banned", help="banned phrases absent")
    banned.add_argument("--phrase", action="append", required=True, metavar="PHRASE")
    structure = checks.add_parser("structure", help="one H1 title and at least N H2 sections")
    structure.add_argument("--min-sections", type=int, default=1)
    checks.add_parser("links", help="every link well-formed")
    for sub in checks.choices.values():
        sub.add_argument("file", type=Path)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.check == "words" and args.min_words is None and args.max_words is None:
        parser.error("words: give --min, --max or both")
    try:
        text = read_text(args.file)
    except ConfigError as exc:
        print(f"{args.check}: {exc}")
        return EXIT_UNREADABLE
    runners: dict[str, Callable[[], CheckResult]] = {
        "words": lambda: check_words(text, min_words=args.min_words, max_words=args.max_words),
        "facts": lambda: check_facts(text, args.require),
        "banned": lambda: check_banned(text, args.phrase),
        "structure": lambda: check_structure(text, min_sections=args.min_sections),
        "links": lambda: check_links(text),
    }
    passed, message = runners[args.check]()
    print(f"{args.check}: {'ok' if passed else 'FAILED'}: {args.file}: {message}")
    return EXIT_PASSED if passed else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
