"""Small real git repositories for tests, built with the git CLI at known dates."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git_env(day: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    date = f"2023-01-{day:02d}T12:00:00+02:00"  # 10:00 UTC: the wrapper must convert
    env.update(
        GIT_AUTHOR_NAME="Ada", GIT_AUTHOR_EMAIL="ada@example.org",
        GIT_COMMITTER_NAME="Ada", GIT_COMMITTER_EMAIL="ada@example.org",
        GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date,
        GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
    )  # fmt: skip
    return env


def git(repo: Path, *args: str, day: int = 1) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        env=git_env(day),
        check=True,
        capture_output=True,
        timeout=30,
    )
    return done.stdout.decode().strip()


def commit(repo: Path, day: int, message: str, files: dict[str, str | bytes]) -> str:
    for name, content in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, day=day)
    return git(repo, "rev-parse", "HEAD")


def init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=git_env(1), check=True)
    return repo
