"""The git side of publishing: push the run's branch, commit a file to another branch; and
fetch a pushed branch a loop starts from.

Every call goes through :mod:`harness.workspace.git_cmd` (no repository-configured program
runs). A token for an ``http(s)`` remote is given by a credential helper scoped to the remote's
host (``credential.<scheme>://<host>.helper``): git asks it only for that host, and follows no
redirect (``http.followRedirects=false``), so the token never reaches another host. The token
travels in the environment (:data:`TOKEN_VARIABLE`), never on a command line where another user
could read it.
"""

from __future__ import annotations

import tempfile
import urllib.parse
from pathlib import Path

from harness.workspace.git_cmd import config_get, git, rev_parse, run_git


def push_branch(root: Path, remote: str, branch: str, *, token: str | None = None) -> str:
    """Push ``branch`` to ``remote`` (forced: a run's branch is the run's own); its head."""
    options, env = token_config(root, remote, token)
    proc = run_git(root, (*options, "push", "--force", "--quiet", remote,
                          f"refs/heads/{branch}:refs/heads/{branch}"), env)  # fmt: skip
    if proc.returncode != 0:
        raise OSError(f"git push to {remote} failed: {proc.stderr.strip()[-500:]}")
    return git(root, "rev-parse", f"refs/heads/{branch}").strip()


def fetch_branch(root: Path, remote: str, branch: str, *, token: str | None = None) -> str:
    """Fetch ``branch`` of ``remote`` into ``refs/remotes/<remote>/<branch>``; its head."""
    tracking = f"refs/remotes/{remote}/{branch}"
    options, env = token_config(root, remote, token)
    proc = run_git(root, (*options, "fetch", "--quiet", "--no-tags", remote,
                          f"+refs/heads/{branch}:{tracking}"), env)  # fmt: skip
    if proc.returncode != 0:
        raise OSError(f"git fetch of {branch} from {remote} failed: {proc.stderr.strip()[-500:]}")
    return git(root, "rev-parse", tracking).strip()


def show_file(root: Path, ref: str, path: str) -> str:
    """The text of ``path`` as ``ref`` holds it."""
    proc = run_git(root, ("cat-file", "blob", f"{ref}:{path}"), None)
    if proc.returncode != 0:
        raise OSError(f"{path} is not on {ref}: {proc.stderr.strip()}")
    return proc.stdout


def commit_file(root: Path, branch: str, path: str, content: str, message: str) -> str:
    """Commit ``content`` as ``path`` on ``branch`` (made if missing) without touching any
    checkout; the new commit."""
    blob = git(root, "hash-object", "-w", "--stdin", stdin=content).strip()
    head = rev_parse(root, f"refs/heads/{branch}")
    with tempfile.TemporaryDirectory(prefix="harness-index-") as folder:
        env = {"GIT_INDEX_FILE": str(Path(folder) / "index")}
        if head:
            git(root, "read-tree", head, env=env)
        git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        tree = git(root, "write-tree", env=env).strip()
    parents = ("-p", head) if head else ()
    commit = git(root, "commit-tree", tree, *parents, "-m", message, env=_author(root)).strip()
    git(root, "update-ref", f"refs/heads/{branch}", commit, *((head,) if head else ()))
    return commit


def _author(root: Path) -> dict[str, str]:
    """The repository's identity, else the harness's (commit-tree needs one)."""
    name = config_get(root, "user.name") or "harness"
    email = config_get(root, "user.email") or "harness@localhost"
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}  # fmt: skip


TOKEN_VARIABLE = "HARNESS_GIT_TOKEN"
"""The environment variable the credential helper reads the token from."""

_HELPER = (
    '!f() { test "$1" = get || exit 0; echo username=x-access-token; '
    f'echo "password=${TOKEN_VARIABLE}"; }}; f'
)


def token_config(
    root: Path, remote: str, token: str | None
) -> tuple[tuple[str, ...], dict[str, str]]:
    """For an ``http(s)`` remote and a token: git's options (a credential helper for the remote's
    host alone, redirects not followed) and the environment holding the token; else nothing."""
    url = config_get(root, f"remote.{remote}.url") or ""
    if not token or not url.startswith(("https://", "http://")):
        return (), {}
    parts = urllib.parse.urlsplit(url)
    host = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    options = ("-c", f"credential.{host}.helper={_HELPER}", "-c", "http.followRedirects=false")
    return options, {TOKEN_VARIABLE: token}
