"""A real git remote for tests: a bare repository reached by a ``file://`` URL, fed from a work
tree that commits and pushes to it. Shared by the repository, pipeline and reliability tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


class GitRemote:
    """``bare`` is the remote (``url``), ``work`` the tree that pushes to it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.bare = base / "remote.git"
        self.work = base / "work"
        self.url = self.bare.as_uri()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(base),
            "GIT_AUTHOR_NAME": "Test",
            "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "Test",
            "GIT_COMMITTER_EMAIL": "test@example.com",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        base.mkdir(parents=True, exist_ok=True)
        self.create_bare()
        self.git("init", "--quiet", "-b", "main", str(self.work), cwd=base)
        self.git("remote", "add", "origin", self.url)

    def create_bare(self) -> None:
        """(Re)create the empty bare repository, e.g. after a test deleted it."""
        self.git("init", "--quiet", "--bare", "-b", "main", str(self.bare), cwd=self.base)

    def git(self, *args: str, cwd: Path | None = None) -> str:
        """Run git in the work tree (or ``cwd``); returns its stdout."""
        done = subprocess.run(
            ["git", *args], cwd=cwd or self.work, env=self.env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    def commit(self, message: str = "change", *, branch: str = "main", force: bool = False) -> str:
        """Commit everything in the work tree and push it; returns the new commit."""
        self.git("add", "-A")
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        self.git("push", "--quiet", *(["--force"] if force else []), "origin", f"HEAD:refs/heads/{branch}")
        return self.git("rev-parse", "HEAD")
