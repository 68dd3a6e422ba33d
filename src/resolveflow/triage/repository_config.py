"""Reading a repository's ``.github/resolveflow.yml`` for a triage run (docs/repository-config.md).

Every run asks GitHub for the file (so a change applies to the next run); the parse is cached
by the file's blob sha, git's hash of its content, so an unchanged file is not parsed again in
this process. What a run keeps is plain JSON (``ConfigRead.as_state``): the checkpoint and the
run's detail carry it, so a run resumed elsewhere merges the same file.

YAML is read with PyYAML's safe loader (plain data, no tags that build objects), after a size
bound, and each node is checked before it is composed (``_BoundedLoader``): no deeper than
``MAX_DEPTH`` (PyYAML's composer recurses per level, so a deeper file would exhaust the stack
before any check on the built tree ran), no aliases (one alias can make a small file a huge
document), no key given twice. Whatever else the parser raises is the file's problem too: the
file is not applied and the run goes on.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import ValidationError

from resolveflow.adapters.github.protocol import GitHub, RepoName
from resolveflow.errors import InvalidInput, ResolveFlowError
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
    rule_problems,
    schema_problems,
)

logger = logging.getLogger(__name__)

CACHED_FILES = 256  # distinct file versions kept parsed per process
MERGE_TAG = "tag:yaml.org,2002:merge"
SHOWN_PROBLEMS = 20  # lines a run keeps of one file's problems


@dataclass(frozen=True)
class Parsed:
    """A file's content as read: the config when its schema holds, else its problems."""

    config: RepositoryConfig | None
    problems: tuple[Problem, ...]
    lines: dict[Path, int] = field(default_factory=dict)  # where each key and item starts

    def placed(self, problem: Problem) -> Problem:
        """``problem`` with the line of the nearest place the file has (unless it has one)."""
        if problem.line is not None:
            return problem
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
    return checked(found.sha, found.content, cache, repo, policy)


def checked(
    sha: str, content: bytes, cache: ConfigCache, repo: str, policy: PolicyFile
) -> ConfigRead:
    """What a run makes of the file's bytes (``load`` after the read): never raises. At most
    ``SHOWN_PROBLEMS`` lines, then one saying how many more (a file of 20,000 bad labels would
    otherwise put 20,000 lines in the run's detail)."""
    parsed = cache.parsed(sha, content)
    problems = list(parsed.problems)
    if parsed.config is not None:
        problems += narrowing_problems(parsed.config, policy, repo)
    if not problems:
        return ConfigRead(sha, parsed.config)
    lines = [parsed.placed(p).text() for p in problems[:SHOWN_PROBLEMS]]
    if len(problems) > SHOWN_PROBLEMS:
        more = len(problems) - SHOWN_PROBLEMS
        lines.append(f"`{CONFIG_PATH}`: {more} more problem{'s' if more > 1 else ''} not shown")
    return ConfigRead(sha, None, tuple(lines))


def github_suggestions(state: Mapping[str, Any]) -> bool:
    """Whether the file a run kept sends approved labels and closes as GitHub suggestions."""
    kept = state.get("repo_config")
    config = kept.get("config") if isinstance(kept, dict) else None
    return isinstance(config, dict) and config.get("github_suggestions") is True


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
    """The file's bytes as a config, or every problem found (each placed on its line). Never
    raises: whatever a file makes the parser do is that file's problem, so a run goes on under
    the tenant's policy and the outcome is cached like any other."""
    try:
        return _parse(content)
    except Exception as exc:  # a repository's bytes must never fail a run (nor escape the cache)
        logger.warning("repository config unparsable", extra={"error": type(exc).__name__})
        return _refused(f"could not be read as YAML ({type(exc).__name__})")


def _parse(content: bytes) -> Parsed:
    if len(content) > MAX_BYTES:
        return _refused(f"the file is {len(content)} bytes; at most {MAX_BYTES} are read")
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return _refused("the file is not UTF-8 text")
    try:
        loader = _BoundedLoader(text)  # its reader refuses control characters at once
    except yaml.reader.ReaderError as exc:
        return _refused(f"not valid YAML: {_unreadable(exc)}")
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else {}
    except _Refused as refused:
        return Parsed(None, (refused.problem,), loader.lines)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        return Parsed(None, (Problem((), f"not valid YAML: {_marked(exc)}", line),))
    except yaml.YAMLError as exc:
        return _refused(f"not valid YAML: {_one_line(exc)}")
    finally:
        loader.dispose()
    return _validated(data, loader.lines)


def _marked(exc: yaml.MarkedYAMLError) -> str:
    """PyYAML's problem; with its context when the problem alone says only "but found ..."."""
    problem = exc.problem or str(exc)
    if exc.context and problem.startswith("but "):
        problem = f"{exc.context}, {problem}"
    return _one_line(problem)


def _unreadable(exc: yaml.reader.ReaderError) -> str:
    code = exc.character if isinstance(exc.character, int) else ord(exc.character)
    return f"the character #x{code:04x} at offset {exc.position} is not allowed"


def _one_line(error: object) -> str:
    return " ".join(str(error).split())[:300]


def _refused(message: str) -> Parsed:
    return Parsed(None, (Problem((), message),))


def _validated(data: Any, lines: dict[Path, int]) -> Parsed:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return Parsed(None, (Problem((), "the file must be a mapping of settings", 1),), lines)
    placing = Parsed(None, (), lines)
    try:
        config = RepositoryConfig.model_validate(data)
    except ValidationError as exc:
        return Parsed(None, tuple(placing.placed(p) for p in schema_problems(exc)), lines)
    found = rule_problems(config)
    hours = config.quiet_hours
    if hours is not None:
        try:
            ZoneInfo(hours.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            where = ("quiet_hours", "time_zone")
            found.append(Problem(where, f"unknown time zone {hours.time_zone!r}"))
    if found:
        return Parsed(None, tuple(placing.placed(p) for p in found), lines)
    return Parsed(config, (), lines)


class _Refused(InvalidInput):
    """A limit the file breaks, found while it is being composed (caught in ``_parse``: it
    never leaves this module)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """PyYAML's safe loader, checking each node before composing it. Its composer recurses once
    per level, and it builds the whole tree before anything can look at it: so a node past
    ``MAX_DEPTH`` is refused before its children are read (the parse stops within a few events,
    whatever the file holds after), an alias where it stands, a key given twice once its
    mapping is read. ``lines``: where each key and item starts, for the problems' lines."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.lines: dict[Path, int] = {}
        self._paths: list[Path] = []  # the path of each node being composed, outermost first

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        path = self._child_path(parent, index)
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(Problem(path, "anchors and aliases are not allowed", line))
        if len(self._paths) > MAX_DEPTH:
            raise _Refused(Problem(path, f"nested deeper than {MAX_DEPTH} levels", line))
        keyed = isinstance(index, yaml.Node)  # a mapping's value is placed where its key starts
        self.lines.setdefault(path, index.start_mark.line + 1 if keyed else line)
        self._paths.append(path)
        try:
            node: yaml.Node = super().compose_node(parent, index)
        finally:
            self._paths.pop()
        if isinstance(node, yaml.MappingNode):
            self._check_keys(node, path)
        return node

    def _child_path(self, parent: yaml.Node | None, index: Any) -> Path:
        """Where the node composed next is: its key's name or its item's index in ``parent``
        (a mapping's key itself is placed at its mapping)."""
        if parent is None or not self._paths:
            return ()
        here = self._paths[-1]
        if index is None:
            return here
        if isinstance(index, int):
            return (*here, index)
        name = index.value if isinstance(index, yaml.ScalarNode) else str(len(parent.value))
        return (*here, name)

    def _check_keys(self, node: yaml.MappingNode, path: Path) -> None:
        """Refuse a key given twice (as read: YAML 1.1's ``on`` and ``yes`` are one key) and
        merge keys (``<<``: another way of giving keys twice)."""
        seen: dict[Any, int] = {}
        for key, _ in node.value:
            line = key.start_mark.line + 1
            if key.tag == MERGE_TAG:
                raise _Refused(Problem(path, "merge keys (<<) are not allowed", line))
            if not isinstance(key, yaml.ScalarNode):
                continue  # a list or mapping as a key is refused when it is built
            name = self.construct_object(key)
            if name in seen:
                message = f"the key {key.value!r} is given twice (first on line {seen[name]})"
                raise _Refused(Problem((*path, key.value), message, line))
            seen[name] = line
