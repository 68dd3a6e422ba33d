"""The errors of reading a local git clone, each under one category of ``resolveflow.errors`` so
the CLI and the web map them once. Messages are one line and name the clone, the object or the
command; they never carry a traceback or git's whole stderr."""

from __future__ import annotations

from resolveflow.errors import ConfigurationError, InvalidInput, NotFound, Unavailable


class GitNotInstalled(ConfigurationError):
    """git is not installed (looked for 'git' on PATH)."""


class CloneMissing(ConfigurationError):
    """The configured clone is missing or is not a git repository."""


class ObjectMissing(NotFound):
    """A commit or file is missing from the clone (a partial clone is never fetched into)."""


class GitCommandFailed(Unavailable):
    """A git command failed."""


class GitTimeout(Unavailable):
    """A git command took too long and was stopped."""


class InvalidRevision(InvalidInput):
    """Not a commit id (hexadecimal) or a revision git may be given."""
