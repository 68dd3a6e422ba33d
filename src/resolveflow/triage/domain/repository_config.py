"""A repository's own configuration, ``.github/resolveflow.yml`` on its default branch (issue 32,
docs/repository-config.md). Pure: the file's text is read and parsed by
``triage/repository_config.py``; here are its model, its checks against the tenant's policy and
the merge.

The file can only NARROW what the tenant's policy file allows for the repository, never widen it:

- ``labels``: the repository's taxonomy, a subset of every label the policy allows there; a
  proposal then carries only labels in both;
- ``rules``: the policy's rule shape; they run after the policy's own rules, and each label they
  add must already be allowed for their branch by the policy;
- ``suggestions``: kind -> mode, each as quiet as the policy's or quieter (off < digest < on <
  always);
- ``quiet_hours``: during them every kind that would go to the inbox goes to the digest;
- ``github_suggestions``: ``true`` sends the approved labels and duplicate closes to GitHub as
  suggestions (``suggest: true``) that a maintainer accepts or dismisses there;
- ``refine``: scopes whose globs are among the policy's, an ``include`` within the policy's (any
  when the policy includes every file), and more ``exclude`` globs.

A problem is one ``Problem`` (where in the file, what is wrong); a file with any problem is not
applied at all: the run goes on under the tenant's policy alone, so a broken file cannot loosen
anything, and the run's page shows every problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import time
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    ValidationError,
    field_validator,
)

from resolveflow.domain.vocabulary import SuggestionKind, SuggestionMode
from resolveflow.gate.domain.quiet import place_modes
from resolveflow.policy_file import Classification, PolicyFile, Rule

CONFIG_PATH = ".github/resolveflow.yml"
MAX_BYTES = 64 * 1024  # a configuration, not a data file: bounds the parse
MAX_DEPTH = 6  # the schema's deepest value (refine.scopes.frontend[0]) is at depth 4
LOUDNESS = {  # how far a mode reaches: the file may only move a kind down this order
    SuggestionMode.OFF: 0,
    SuggestionMode.DIGEST: 1,
    SuggestionMode.ON: 2,
    SuggestionMode.ALWAYS: 3,
}
# Keys a tenant configures and a repository cannot name (a clearer line than "extra field").
TENANT_ONLY = {"projects", "mailboxes", "tenants", "repositories", "extra_labels", "clone"}

Label = Annotated[str, StringConstraints(min_length=1, max_length=50)]
Glob = Annotated[str, StringConstraints(min_length=1, max_length=200)]
_HOURS = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")

Path = tuple[str | int, ...]  # where in the file: keys and list indexes


class QuietHours(BaseModel):
    """``between: "22:00-07:00"`` (may cross midnight) in ``time_zone`` (an IANA name)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    between: str = Field(pattern=_HOURS.pattern)
    time_zone: str = Field(default="UTC", min_length=1, max_length=64)

    def covers(self, local: time) -> bool:
        """Whether ``local`` (a wall-clock time in ``time_zone``) is inside the quiet hours."""
        match = _HOURS.fullmatch(self.between)
        assert match is not None  # the field's pattern
        start = time(int(match[1]), int(match[2]))
        end = time(int(match[3]), int(match[4]))
        moment = local.replace(second=0, microsecond=0, tzinfo=None)
        if start <= end:
            return start <= moment < end
        return moment >= start or moment < end


class RefineScopes(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    frontend: tuple[Glob, ...] | None = None
    backend: tuple[Glob, ...] | None = None


class RefineNarrowing(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    scopes: RefineScopes | None = None
    include: tuple[Glob, ...] | None = None
    exclude: tuple[Glob, ...] = ()


class RepositoryConfig(BaseModel):
    """The file's schema: every field optional, nothing else allowed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    labels: tuple[Label, ...] | None = None
    rules: tuple[Rule, ...] = ()
    suggestions: dict[SuggestionKind, SuggestionMode] = Field(default_factory=dict)
    quiet_hours: QuietHours | None = None
    refine: RefineNarrowing | None = None
    # approved labels and duplicate closes go to GitHub as suggestions a maintainer accepts or
    # dismisses there (quieter than applying them, so the file may turn it on by itself)
    github_suggestions: StrictBool = False

    @field_validator("suggestions", mode="before")
    @classmethod
    def _yaml_switches(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare on/off as true/false: take them for the modes they spell.
        if isinstance(value, dict):
            return {k: _switch(v) for k, v in value.items()}
        return value


def _switch(value: Any) -> Any:
    if value is True:
        return SuggestionMode.ON.value
    if value is False:
        return SuggestionMode.OFF.value
    return value


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the file: where (``path``; ``line`` once the parse has placed it)."""

    path: Path
    message: str
    line: int | None = None

    def text(self) -> str:
        """The one line a run's page shows."""
        where = f"`{CONFIG_PATH}`" + (f" line {self.line}" if self.line else "")
        field = ".".join(str(part) for part in self.path)
        return f"{where}: {field}: {self.message}" if field else f"{where}: {self.message}"


def schema_problems(exc: ValidationError) -> list[Problem]:
    """Each of pydantic's errors as a ``Problem`` at its place in the file."""
    found: list[Problem] = []
    for error in exc.errors():
        path: Path = tuple(part for part in error["loc"] if isinstance(part, str | int))
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            key = str(path[-1]) if path else ""
            message = (
                f"{key!r} is configured by the tenant's policy, not by a repository"
                if key in TENANT_ONLY
                else f"unknown field {key!r}"
            )
        found.append(Problem(path, message))
    return found


def rule_problems(config: RepositoryConfig) -> list[Problem]:
    """Rules that would decide every issue: an empty title prefix starts every title, so the
    repository's rule would take the place of the built-in classification for all of them."""
    return [
        Problem(
            ("rules", i, "when_title_prefix"),
            "an empty prefix matches every title; name the prefix the rule is for",
        )
        for i, rule in enumerate(config.rules)
        if rule.when_title_prefix == ""
    ]


# --- the checks against the tenant's policy ---------------------------------------------------


def narrowing_problems(config: RepositoryConfig, policy: PolicyFile, repo: str) -> list[Problem]:
    """Everything in ``config`` that would widen the tenant's policy for ``repo``."""
    repository = policy.for_repository(repo)
    allowed = {label for branch in Classification for label in repository.labels_for(branch)}
    found = [
        Problem(("labels", i), f"{label!r} is not allowed for {repo} by the tenant's policy")
        for i, label in enumerate(config.labels or ())
        if label not in allowed
    ]
    for i, rule in enumerate(config.rules):
        branch_allows = repository.labels_for(rule.classification)
        found += [
            Problem(
                ("rules", i, "labels", j),
                f"{label!r} is not allowed for {rule.classification.value} on {repo} by the "
                "tenant's policy",
            )
            for j, label in enumerate(rule.labels)
            if label not in branch_allows
        ]
    modes = place_modes(policy, repo)
    for kind, mode in config.suggestions.items():
        ceiling = modes.get(kind, SuggestionMode.ON)
        if LOUDNESS[mode] > LOUDNESS[ceiling]:
            found.append(
                Problem(
                    ("suggestions", kind.value),
                    f"{mode.value!r} is louder than the tenant's policy allows for {repo} "
                    f"({ceiling.value!r}); a repository can only make a kind quieter",
                )
            )
    if config.refine is not None:
        found += _refine_problems(config.refine, policy.for_repository(repo).refine, repo)
    return found


def _refine_problems(wanted: RefineNarrowing, raw: dict[str, Any], repo: str) -> list[Problem]:
    found: list[Problem] = []
    scopes = raw.get("scopes") or {}
    for scope in ("frontend", "backend"):
        globs = getattr(wanted.scopes, scope, None) if wanted.scopes else None
        mine = set(scopes.get(scope) or ()) if isinstance(scopes, dict) else set()
        found += [
            Problem(
                ("refine", "scopes", scope, i),
                f"{glob!r} is not one of the tenant's {scope} globs for {repo}",
            )
            for i, glob in enumerate(globs or ())
            if glob not in mine
        ]
    include = set(raw.get("include") or ())
    if include and wanted.include is not None:
        found += [
            Problem(
                ("refine", "include", i),
                f"{glob!r} is not among the files the tenant's policy includes for {repo}",
            )
            for i, glob in enumerate(wanted.include)
            if glob not in include
        ]
    return found


# --- the merge --------------------------------------------------------------------------------


def narrowed(
    policy: PolicyFile, repo: str, config: RepositoryConfig, *, quiet_now: bool
) -> PolicyFile:
    """The policy file as it holds for ``repo`` under ``config`` (which ``narrowing_problems``
    found nothing wrong with): the same file, the repository's entry narrowed. ``quiet_now``:
    the run is inside the file's quiet hours."""
    before = policy.for_repository(repo)
    entry: dict[str, Any] = {}
    for name, override in policy.repositories.items():
        if name.lower() == repo.lower():
            entry.update(override)
    if config.labels is not None:
        taxonomy = set(config.labels)
        if before.allowed_labels is not None:
            taxonomy &= set(before.allowed_labels)
        entry["allowed_labels"] = sorted(taxonomy)
    if config.rules:  # after the tenant's: the policy's own rules decide first
        entry["rules"] = [
            *(rule.model_dump(mode="json") for rule in before.rules),
            *(rule.model_dump(mode="json") for rule in config.rules),
        ]
    modes = {**place_modes(policy, repo), **config.suggestions}
    if quiet_now:
        modes = {kind: _quieted(modes.get(kind, SuggestionMode.ON)) for kind in SuggestionKind}
    if modes:
        entry["suggestions"] = {kind.value: mode.value for kind, mode in modes.items()}
    if config.refine is not None:
        entry["refine"] = _narrowed_refine(config.refine, dict(before.refine))
    repositories = {k: v for k, v in policy.repositories.items() if k.lower() != repo.lower()}
    repositories[repo] = entry
    result = PolicyFile(defaults=policy.defaults, repositories=repositories, tenants=policy.tenants)
    result._source = policy._source
    return result


def _quieted(mode: SuggestionMode) -> SuggestionMode:
    """In quiet hours the inbox stays still: what would go there goes to the digest."""
    return SuggestionMode.DIGEST if LOUDNESS[mode] > LOUDNESS[SuggestionMode.DIGEST] else mode


def _narrowed_refine(wanted: RefineNarrowing, raw: dict[str, Any]) -> dict[str, Any]:
    if wanted.scopes is not None:
        scopes = dict(raw.get("scopes") or {})
        for scope in ("frontend", "backend"):
            globs = getattr(wanted.scopes, scope)
            if globs is not None:
                scopes[scope] = list(globs)
        raw["scopes"] = scopes
    if wanted.include is not None:
        raw["include"] = list(wanted.include)
    if wanted.exclude:
        raw["exclude"] = list(dict.fromkeys([*(raw.get("exclude") or ()), *wanted.exclude]))
    return raw
