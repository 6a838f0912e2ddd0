"""Make one case of the real-project matrix from a clone of its upstream repository.

    python tests/realworld/make_case.py CLONE FIX_COMMIT NAME --tests ID [ID ...] [--shape TEXT]

The case holds the tree of the fix's parent commit with the fix's own test changes applied
(so the upstream test shows the bug), the fixed versions of the source files the fix changed,
and a ``case.json`` naming where it came from. Documentation, CI settings and files over
256 KB are left out to keep the case small.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import tarfile
from pathlib import Path, PurePosixPath

LEFT_OUT = {
    ".github",
    "docs",
    "doc",
    "documentation",
    "bench",
    "benchmarks",
    "examples",
    "misc",
    "releasenotes",
    "conda.recipe",
    "newsfragments",
    ".omp",
    "scripts",
    "requirements",
}
LARGEST = 256 * 1024


def git(clone: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True).stdout


def is_test(path: str) -> bool:
    return "test" in PurePosixPath(path).name or "tests" in PurePosixPath(path).parts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("clone", type=Path)
    parser.add_argument("fix")
    parser.add_argument("name")
    parser.add_argument("--tests", nargs="+", required=True)
    parser.add_argument("--shape", default="")
    parser.add_argument("--repository", required=True)
    args = parser.parse_args()
    fix = git(args.clone, "rev-parse", args.fix).decode().strip()
    base = git(args.clone, "rev-parse", f"{fix}^").decode().strip()
    changed = git(args.clone, "diff", "--name-only", base, fix).decode().split()
    tests = [p for p in changed if p.endswith(".py") and is_test(p)]
    sources = [p for p in changed if p.endswith(".py") and not is_test(p)]
    out = Path(__file__).parent / "cases" / args.name
    (out / "fix").mkdir(parents=True, exist_ok=True)
    listing = git(args.clone, "ls-tree", "-r", "-l", base).decode().splitlines()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for line in listing:
            meta, path = line.split("\t", 1)
            mode, kind, _, size = meta.split()
            if kind != "blob" or mode == "120000" or PurePosixPath(path).parts[0] in LEFT_OUT:
                continue
            if int(size) > LARGEST:
                continue
            data = git(args.clone, "show", f"{fix if path in tests else base}:{path}")
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), int(mode[-3:], 8), 0
            archive.addfile(info, io.BytesIO(data))
        for path in tests:
            if not any(line.endswith("\t" + path) for line in listing):
                data = git(args.clone, "show", f"{fix}:{path}")
                info = tarfile.TarInfo(path)
                info.size, info.mode, info.mtime = len(data), 0o644, 0
                archive.addfile(info, io.BytesIO(data))
    (out / "base.tar.gz").write_bytes(buffer.getvalue())
    for path in sources:
        target = out / "fix" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(git(args.clone, "show", f"{fix}:{path}"))
    case = {
        "repository": args.repository,
        "fix_commit": fix,
        "base_commit": base,
        "subject": git(args.clone, "log", "-1", "--format=%s", fix).decode().strip(),
        "shape": args.shape,
        "fixed": sources,
        "tests": args.tests,
    }
    (out / "case.json").write_text(json.dumps(case, indent=2) + "\n")


if __name__ == "__main__":
    main()
