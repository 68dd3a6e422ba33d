"""Reading a repository's ``.github/resolveflow.yml`` for a triage run (docs/repository-config.md).

Every run asks GitHub for the file (so a change applies to the next run); the parse is cached
by the file's blob sha, git's hash of its content, so an unchanged file is not parsed again in
this process. What a run keeps is plain JSON (``ConfigRead.as_state``): the checkpoint and the
run's detail carry it, so a run resumed elsewhere merges the same file.

YAML is read with PyYAML's safe loader (plain data, no tags that build objects), after a size
bound, and the node tree is checked before anything is built: no deeper than ``MAX_DEPTH``, and no
anchors/aliases (one alias can make a small file a huge document).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import ValidationError

from resolveflow.adapters.github.protocol import GitHub, RepoName
from resolveflow.errors import ResolveFlowError
from resolveflow.policy_file import PolicyFile
from resolveflow.triage.domain.repository_config import (
    CONFIG_PATH,
    MAX_BYTES,
    MAX_DEPTH,
    Path,
    Problem,
    RepositoryConfig,
    narrowed,
    narrowing_problems,
    schema_problems,
)

CACHED_FILES = 256  # distinct file versions kept parsed per process


@dataclass(frozen=True)
class Parsed:
    """A file's content as read: the config when its schema holds, else its problems."""

    config: RepositoryConfig | None
    problems: tuple[Problem, ...]
    lines: dict[Path, int] = field(default_factory=dict)  # where each key and item starts

    def placed(self, problem: Problem) -> Problem:
        """``problem`` with the line of the nearest place the file has."""
        path = problem.path
        while path and path not in self.lines:
            path = path[:-1]
        line = self.lines.get(path, problem.line)
        return Problem(problem.path, problem.message, line)


class ConfigCache:
    """Parsed files by blob sha (LRU-bounded, thread-safe); ``parses`` counts real parses."""

    def __init__(self, size: int = CACHED_FILES) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._parsed: OrderedDict[str, Parsed] = OrderedDict()
        self.parses = 0

    def parsed(self, sha: str, content: bytes) -> Parsed:
        with self._lock:
            found = self._parsed.get(sha)
            if found is not None:
                self._parsed.move_to_end(sha)
                return found
        result = parse(content)
        with self._lock:
            self.parses += 1
            self._parsed[sha] = result
            if len(self._parsed) > self._size:
                self._parsed.popitem(last=False)
        return result


PROCESS_CACHE = ConfigCache()


@dataclass(frozen=True)
class ConfigRead:
    """What a run learned: the file's sha (None: no file), the config it applies, its errors."""

    sha: str | None
    config: RepositoryConfig | None
    errors: tuple[str, ...] = ()

    def as_state(self) -> dict[str, Any]:
        return {
            "sha": self.sha,
            "config": self.config.model_dump(mode="json") if self.config else None,
            "errors": list(self.errors),
        }


def load(github: GitHub, cache: ConfigCache, repo: str, policy: PolicyFile) -> ConfigRead:
    """The repository's file checked against ``policy``: applied when nothing is wrong with it,
    else not at all (the run goes on under the tenant's policy alone) with one line per problem."""
    try:
        found = github.get_repository_file(RepoName.parse(repo), CONFIG_PATH)
    except ResolveFlowError as exc:
        line = f"`{CONFIG_PATH}`: could not be read ({exc.message}); the tenant's policy applies"
        return ConfigRead(None, None, (line,))
    if found is None:
        return ConfigRead(None, None)
    parsed = cache.parsed(found.sha, found.content)
    problems = list(parsed.problems)
    if parsed.config is not None:
        problems += narrowing_problems(parsed.config, policy, repo)
    if problems:
        return ConfigRead(found.sha, None, tuple(parsed.placed(p).text() for p in problems))
    return ConfigRead(found.sha, parsed.config)


def effective_policy(
    policy: PolicyFile, repo: str, kept: dict[str, Any] | None, now: datetime
) -> PolicyFile:
    """The tenant's policy narrowed by the config a run kept (``ConfigRead.as_state``)."""
    if not kept or not kept.get("config"):
        return policy
    config = RepositoryConfig.model_validate(kept["config"])
    hours = config.quiet_hours
    quiet_now = hours is not None and hours.covers(now.astimezone(ZoneInfo(hours.time_zone)).time())
    return narrowed(policy, repo, config, quiet_now=quiet_now)


# --- the parse --------------------------------------------------------------------------------


def parse(content: bytes) -> Parsed:
    """The file's bytes as a config, or every problem found (each placed on its line)."""
    if len(content) > MAX_BYTES:
        return _refused(f"the file is {len(content)} bytes; at most {MAX_BYTES} are read")
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return _refused("the file is not UTF-8 text")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[Path, int] = {}
        shape = _shape_problem(node, (), 0, lines, set()) if node is not None else None
        if shape is not None:
            return Parsed(None, (shape,), lines)
        data = loader.construct_document(node) if node is not None else {}
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        return Parsed(None, (Problem((), f"not valid YAML: {exc.problem or exc}", line),))
    except yaml.YAMLError as exc:
        return _refused(f"not valid YAML: {exc}")
    finally:
        loader.dispose()
    return _validated(data, lines)


def _refused(message: str) -> Parsed:
    return Parsed(None, (Problem((), message),))


def _validated(data: Any, lines: dict[Path, int]) -> Parsed:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return Parsed(None, (Problem((), "the file must be a mapping of settings", 1),), lines)
    try:
        config = RepositoryConfig.model_validate(data)
    except ValidationError as exc:
        placed = Parsed(None, (), lines)
        return Parsed(None, tuple(placed.placed(p) for p in schema_problems(exc)), lines)
    hours = config.quiet_hours
    if hours is not None:
        try:
            ZoneInfo(hours.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            where = ("quiet_hours", "time_zone")
            problem = Problem(where, f"unknown time zone {hours.time_zone!r}")
            return Parsed(None, (Parsed(None, (), lines).placed(problem),), lines)
    return Parsed(config, (), lines)


def _shape_problem(
    node: yaml.Node, path: Path, depth: int, lines: dict[Path, int], seen: set[int]
) -> Problem | None:
    """Record where each key and item starts; refuse aliases and too deep a nesting."""
    if id(node) in seen:
        return Problem(path, "anchors and aliases are not allowed", node.start_mark.line + 1)
    seen.add(id(node))
    lines.setdefault(path, node.start_mark.line + 1)
    if depth > MAX_DEPTH:
        return Problem(path, f"nested deeper than {MAX_DEPTH} levels", node.start_mark.line + 1)
    children: list[tuple[str | int, yaml.Node]] = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else str(len(children))
            lines.setdefault((*path, name), key.start_mark.line + 1)
            children.append((name, value))
    elif isinstance(node, yaml.SequenceNode):
        children = list(enumerate(node.value))
    for name, child in children:
        found = _shape_problem(child, (*path, name), depth + 1, lines, seen)
        if found is not None:
            return found
    return None
