"""A loop.toml's outline: name, progress file and folder, read and checked without pydantic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.spec import LoopSpec
from harness.spec.outline import LoopOutline

ROOT = Path(__file__).resolve().parents[2]


def _toml(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "loop.toml").write_text(text, encoding="utf-8")
    return folder / "loop.toml"


@pytest.mark.parametrize(
    "example", sorted(p.parent.name for p in ROOT.glob("examples/*/loop.toml"))
)
def test_the_outline_and_the_whole_spec_agree_on_every_example(example: str) -> None:
    file = ROOT / "examples" / example / "loop.toml"
    outline, spec = LoopOutline.from_toml(file), LoopSpec.from_toml(file)
    assert (outline.name, outline.root, outline.file) == (spec.name, spec.root, spec.source)
    assert outline.progress_path() == spec.progress_path()


def test_a_loop_without_name_or_progress_has_the_specs_defaults(tmp_path: Path) -> None:
    file = _toml(tmp_path / "a", 'goal = "x"\n')
    outline = LoopOutline.from_toml(tmp_path / "a")  # a folder holding one counts
    assert outline == LoopOutline("loop", None, file)
    assert outline.root == (tmp_path / "a").resolve()
    assert outline.progress_path() == (tmp_path / "a").resolve() / "progress" / "loop.md"
    assert LoopSpec.from_toml(file).progress_path() == outline.progress_path()


def test_progress_is_relative_to_the_loop_toml_not_the_current_folder(tmp_path: Path) -> None:
    file = _toml(tmp_path / "b", 'name = "fix.it-2"\nprogress = "state/p.md"\n')
    outline = LoopOutline.from_toml(file)
    assert outline.name == "fix.it-2"
    assert outline.progress_path() == (tmp_path / "b").resolve() / "state" / "p.md"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('name = "two words"\n', "field 'name': should be a string matching"),
        ('name = ".hidden"\n', "field 'name': should be a string matching"),
        ('name = ""\n', "field 'name': should be a string matching"),
        ('name = "loop\\n"\n', "field 'name': should be a string matching"),
        ("name = 3\n", "field 'name': should be a string matching"),
        ("progress = 3\n", "field 'progress': should be a string, not 3"),
        ('progress = ["a.md"]\n', "field 'progress': should be a string, not ['a.md']"),
        ("name = [\n", "not valid TOML: "),
    ],
)
def test_a_wrong_name_or_progress_is_named_with_the_file(
    tmp_path: Path, text: str, problem: str
) -> None:
    file = _toml(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        LoopOutline.from_toml(file)
    assert str(caught.value).startswith(f"{file}: {problem}")
    with pytest.raises(ConfigError):  # the whole spec refuses it too
        LoopSpec.from_toml(file)


def test_a_missing_loop_toml_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"^{tmp_path / 'loop.toml'}: no such file"):
        LoopOutline.from_toml(tmp_path)


def test_fields_the_outline_does_not_read_are_left_to_the_whole_spec(tmp_path: Path) -> None:
    file = _toml(tmp_path, 'name = "x"\nmax_iterations = 0\nbogus = 1\n')
    assert LoopOutline.from_toml(file).name == "x"
    with pytest.raises(ConfigError, match="field 'bogus': unknown field"):
        LoopSpec.from_toml(file)


def test_reading_an_outline_imports_no_pydantic(tmp_path: Path) -> None:
    _toml(tmp_path, 'name = "x"\n')
    code = (
        "import sys\n"
        "from harness.spec.outline import LoopOutline\n"
        f"print(LoopOutline.from_toml({str(tmp_path)!r}).name)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'harness.spec.'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.splitlines() == ["x", "['harness.spec.outline']"]
