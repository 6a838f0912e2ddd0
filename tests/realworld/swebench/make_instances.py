"""Make the SWE-bench-format instances here from upstream fix commits, and their repositories.

    python make_instances.py CLONES OUT

CLONES holds a clone of each repository as OWNER+NAME/repo. An instance is the parent of a fix
commit: ``patch`` is the fix's change outside the tests, ``test_patch`` its change to them, and
the test ids come from running the changed test files with pytest before and after ``patch``
(both with ``test_patch`` applied), read as the official log parser reads them: cut at the
first space, as the published files hold them. Each repository is kept as a shallow bare clone
holding just the instances' base commits (their upstream ids unchanged), packed as
OWNER__NAME.git.tar.gz.
"""

import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

PY = sys.executable
CLONES = Path(sys.argv[1])
OUT = Path(sys.argv[2])
SPECS = [  # OWNER+NAME, fix commit
    ("mahmoud+boltons", "c1c25da"),
    ("mahmoud+boltons", "ead236e"),
    ("kjd+idna", "e00ed28"),
    ("pallets+itsdangerous", "ce5e2cd"),
    ("jmespath+jmespath.py", "4a521f8"),
    ("more-itertools+more-itertools", "f51a53b"),
    ("benjaminp+six", "10a2b75"),
    ("andialbrecht+sqlparse", "f66d12c"),
    ("hukkin+tomli", "96dfe2c"),
    ("pytoolz+toolz", "6a8de2e"),
]


def git(cwd, *args, stdin=None):
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, input=stdin
    ).stdout


def is_test(path):
    p = PurePosixPath(path)
    return "test" in p.name or "tests" in p.parts


def outcomes(tree, files):
    proc = subprocess.run(
        [PY, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", *files],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
    )
    found = {}
    for m in re.finditer(r"^(PASSED|FAILED|ERROR) (.+)$", proc.stdout, re.M):
        # as the official parser reads it: up to the first space, the last line for an id wins
        found[m.group(2).split()[0]] = m.group(1)
    return found


(OUT / "repos").mkdir(parents=True, exist_ok=True)
bases = {}
records = []
for mirror, fix in SPECS:
    clone = CLONES / mirror / "repo"
    owner, name = mirror.split("+")
    fix = git(clone, "rev-parse", fix).strip()
    base = git(clone, "rev-parse", f"{fix}^").strip()
    bases.setdefault(mirror, []).append(base)
    changed = git(clone, "diff", "--name-only", base, fix).split()
    tests = [p for p in changed if is_test(p)]
    code = [p for p in changed if not is_test(p)]
    patch = git(clone, "diff", base, fix, "--", *code)
    test_patch = git(clone, "diff", base, fix, "--", *tests)
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "t"
        git(clone, "worktree", "add", "-q", "--detach", str(tree), base)
        git(tree, "apply", "-", stdin=test_patch)
        test_files = [p for p in tests if p.endswith(".py")]
        before = outcomes(tree, test_files)
        git(tree, "apply", "-", stdin=patch)
        after = outcomes(tree, test_files)
        git(clone, "worktree", "remove", "--force", str(tree))
    f2p = sorted(t for t, o in after.items() if o == "PASSED" and before.get(t) != "PASSED")
    p2p = sorted(t for t, o in after.items() if o == "PASSED" and before.get(t) == "PASSED")
    assert f2p, (mirror, fix, before, after)
    message = git(clone, "log", "-1", "--format=%B", fix).strip()
    records.append(
        {
            "instance_id": f"{owner}__{name}-{fix[:7]}",
            "repo": f"{owner}/{name}",
            "base_commit": base,
            "problem_statement": message,
            "hints_text": "",
            "patch": patch,
            "test_patch": test_patch,
            "FAIL_TO_PASS": json.dumps(f2p),
            "PASS_TO_PASS": json.dumps(p2p),
            "version": "",
            "environment_setup_commit": base,
            "created_at": git(clone, "log", "-1", "--format=%aI", fix).strip(),
        }
    )
    print(mirror, fix[:7], len(f2p), len(p2p), file=sys.stderr)
for mirror, commits in bases.items():
    owner, name = mirror.split("+")
    bare = Path(tempfile.mkdtemp()) / f"{owner}__{name}.git"
    clone = CLONES / mirror / "repo"
    git(clone, "config", "uploadpack.allowAnySHA1InWant", "true")
    git(bare.parent, "init", "-q", "--bare", str(bare))
    git(bare, "fetch", "-q", "--depth", "1", f"file://{clone}", *commits)
    for i, c in enumerate(commits):
        git(bare, "update-ref", f"refs/heads/base-{i}", c)
    git(bare, "symbolic-ref", "HEAD", "refs/heads/base-0")
    git(bare, "gc", "-q", "--prune=now")
    for hook in (bare / "hooks").glob("*"):
        hook.unlink()
    (bare / "description").unlink(missing_ok=True)
    with tarfile.open(OUT / "repos" / f"{owner}__{name}.git.tar.gz", "w:gz") as archive:
        archive.add(bare, arcname=bare.name)
(OUT / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
