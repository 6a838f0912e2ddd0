"""Every Python snippet in docs/loop-engine.md runs and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "loop-engine.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_TRAILING = re.compile(r"\)\s{2,}# (.*)$")


def snippets() -> list[str]:
    return _BLOCK.findall(PAGE.read_text(encoding="utf-8"))


def expected_output(code: str) -> list[str]:
    """The lines a snippet promises: a print's trailing comment, or comments right below it."""
    expected: list[str] = []
    after_print = False
    for line in code.splitlines():
        if line.startswith("# ") and after_print:
            expected.append(line[2:])
            continue
        after_print = line.startswith("print(")
        if after_print and (trailing := _TRAILING.search(line)):
            expected.append(trailing[1])
    return expected


def test_the_page_has_snippets_with_promised_output() -> None:
    assert len(snippets()) >= 15
    assert sum(bool(expected_output(code)) for code in snippets()) >= 12


@pytest.mark.parametrize("code", snippets(), ids=lambda code: code.splitlines()[-1][:40])
def test_a_snippet_prints_what_it_promises(code: str) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "snippet"})
    assert printed.getvalue().splitlines() == expected_output(code)


def test_the_readme_loop_engine_snippet_shows_a_body_and_prints_what_it_promises() -> None:
    readme = PAGE.parents[1] / "README.md"
    (code,) = [block for block in _BLOCK.findall(readme.read_text()) if "ForEach(" in block]
    assert "def summarise(ctx):" in code  # the body's signature is shown, not hidden
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(readme), "exec"), {"__name__": "snippet"})
    assert (
        printed.getvalue().splitlines()
        == expected_output(code)
        == ["3 draft 3", "['One', 'Three']"]
    )
