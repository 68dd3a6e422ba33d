"""Local git clones, read through the git CLI: the one wrapper ResolveFlow uses for git."""

from resolveflow.adapters.git.errors import (
    CloneMissing,
    GitCommandFailed,
    GitNotInstalled,
    GitTimeout,
    InvalidRevision,
    ObjectMissing,
)
from resolveflow.adapters.git.records import CommitInfo, DiffExcerpt, FileStat
from resolveflow.adapters.git.repository import GitRepository

__all__ = [
    "CloneMissing",
    "CommitInfo",
    "DiffExcerpt",
    "FileStat",
    "GitCommandFailed",
    "GitNotInstalled",
    "GitRepository",
    "GitTimeout",
    "InvalidRevision",
    "ObjectMissing",
]
