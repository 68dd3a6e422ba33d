"""The per-repository triage policy: extra rules, and which labels each branch may propose.

A policy file is TOML::

    [defaults]
    ci_label = "ci-failure"
    triage_label = "needs-triage"

    [repositories."acme/widgets"]
    triage_label = "triage"
    comment_on_human_review = true

    [[repositories."acme/widgets".rules]]
    name = "docs"
    when_title_prefix = "[docs]"
    classification = "human_review"
    labels = ["documentation"]

Repository entries override the defaults field by field. Rules run before the built-in ones, in order.

A tenant's project aliases (``issues prepare`` resolves everything from them, never from free
text)::

    [tenants.acme.projects.ops]
    forge = "gitlab"
    project = "group/ops"
    labels = ["bug", "ops"]             # the only labels an issue there may carry
    assignees = { alice = 12 }          # name -> GitLab user id (or a username to look up)

    [tenants.acme.projects.widgets]
    forge = "github"
    project = "acme/widgets"            # must also be on the tenant's repository allowlist
    assignees = { alice = "alice-gh" }  # name -> GitHub login

A repository's refine settings (docs/refine.md; absent: no clone, no scopes, off for webhooks)::

    [repositories."acme/widgets".refine]
    clone = "/srv/clones/widgets"       # a local clone, read by the changes step
    on_new_issues = true                # refine new issues arriving by webhook
    scopes = { frontend = ["web/**", "*.tsx"], backend = ["server/**"] }

Where each kind of suggestion goes (docs/decisions.md, "Quiet by default"; absent: every kind
``on``), in ``[defaults.suggestions]`` or per repository, kind by kind::

    [repositories."acme/widgets".suggestions]
    duplicate = "digest"                # on, always, digest or off
    label = "off"

A product's own section is kept here as the raw TOML table and read by that product through
``PolicyFile.section`` (which names the file and the field in its one error): the ``refine``
table in ``refine/domain/rules.py``, a tenant's ``mailboxes`` in ``mail/domain/mailbox.py``, the
``suggestions`` table in ``gate/domain/quiet.py``.
This module imports no product; the wiring passes each product's check to ``parse_policy``, so
a bad section still fails the load of the whole file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from resolveflow.errors import ConfigError

RawTable = dict[str, Any]
"""A TOML table as ``tomllib`` reads it: a product's section, which that product validates."""

M = TypeVar("M", bound=BaseModel)


class Classification(StrEnum):
    DETERMINISTIC = "deterministic"
    AI_INVESTIGATION = "ai_investigation"
    HUMAN_REVIEW = "human_review"


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1, max_length=64)
    when_label: str | None = None
    when_title_prefix: str | None = None
    classification: Classification
    labels: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _has_condition(self) -> Rule:
        if self.when_label is None and self.when_title_prefix is None:
            raise ValueError("a rule needs when_label or when_title_prefix")
        return self


class RepositoryPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ci_label: str | None = "ci-failure"
    triage_label: str | None = "needs-triage"
    comment_on_human_review: bool = False
    extra_labels: dict[Classification, tuple[str, ...]] = Field(default_factory=dict)
    rules: tuple[Rule, ...] = ()
    # The only labels any branch may propose (None: whatever the fields above name); a
    # repository's own .github/resolveflow.yml narrows it (triage/domain/repository_config.py).
    allowed_labels: tuple[str, ...] | None = None
    refine: RawTable = Field(default_factory=dict)  # refine's: refine/domain/rules.py
    suggestions: RawTable = Field(default_factory=dict)  # the gate's: gate/domain/quiet.py

    def labels_for(self, branch: Classification) -> set[str]:
        """The only label names a proposal of this branch may carry."""
        allowed = set(self.extra_labels.get(branch, ()))
        if branch is Classification.DETERMINISTIC and self.ci_label:
            allowed.add(self.ci_label)
        if branch is not Classification.DETERMINISTIC and self.triage_label:
            allowed.add(self.triage_label)
        for rule in self.rules:
            if rule.classification is branch:
                allowed.update(rule.labels)
        if self.allowed_labels is not None:
            allowed &= set(self.allowed_labels)
        return allowed


class ProjectAlias(BaseModel):
    """Where an alias points, which labels an issue there may carry, and who may be assigned."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    forge: Literal["gitlab", "github"]
    project: str = Field(min_length=3, max_length=255, pattern=r"^[^/\s]+(/[^/\s]+)+$")
    labels: tuple[str, ...] = ()
    assignees: dict[str, int | str] = Field(default_factory=dict)


class TenantPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    projects: dict[str, ProjectAlias] = Field(default_factory=dict)
    mailboxes: RawTable = Field(default_factory=dict)  # mail's: mail/domain/mailbox.py


class PolicyFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    defaults: RawTable = Field(default_factory=dict)
    repositories: dict[str, RawTable] = Field(default_factory=dict)
    tenants: dict[str, TenantPolicy] = Field(default_factory=dict)
    _source: str = PrivateAttr(default="policy")  # the file, named in every error
    # (model, where) -> the section as read: a product reads its section on every approval and
    # every send, and the file does not change under a loaded policy.
    _sections: dict[tuple[type[BaseModel], str], BaseModel] = PrivateAttr(default_factory=dict)

    def projects(self, tenant: str) -> dict[str, ProjectAlias]:
        """The tenant's project aliases (none when the file names no such tenant)."""
        found = self.tenants.get(tenant)
        return dict(found.projects) if found is not None else {}

    def for_repository(self, full_name: str) -> RepositoryPolicy:
        merged = {**self.defaults}
        for name, override in self.repositories.items():
            if name.lower() == full_name.lower():
                merged.update(override)
        return RepositoryPolicy.model_validate(merged)

    def section(self, model: type[M], raw: object, where: str) -> M:
        """A product's section of this file (``raw``, found at ``where``), validated by the
        product's model; a bad one is one ``ConfigError`` naming the file and the field. Read
        once per file: ``where`` names one place, so the same model there is the same section."""
        found = self._sections.get((model, where))
        if found is None:
            try:
                found = model.model_validate(raw)
            except ValidationError as exc:
                raise ConfigError(_message(self._source, where, exc)) from None
            self._sections[(model, where)] = found
        return cast(M, found)


SectionCheck = Callable[[PolicyFile], None]
"""A product's reading of all its sections of a policy file (it raises ``ConfigError``)."""


def parse_policy(
    text: str, source: str = "policy", checks: Iterable[SectionCheck] = ()
) -> PolicyFile:
    """Parse and fully validate a policy (every repository entry too), with one clear error;
    ``checks`` read the products' sections now, so a bad one fails here as well."""
    where = ""
    try:
        policy = PolicyFile.model_validate(tomllib.loads(text))
        where = "defaults"
        RepositoryPolicy.model_validate(policy.defaults)
        for name in policy.repositories:
            where = f"repositories.{name}"
            policy.for_repository(name)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"{source}: not valid TOML: nested too deeply") from None
    except ValidationError as exc:
        raise ConfigError(_message(source, where, exc)) from None
    policy._source = source
    for check in checks:
        check(policy)
    return policy


def _message(source: str, where: str, exc: ValidationError) -> str:
    """One line: an unknown key first (a misspelt key is often why a required one is
    "missing"), named with its place; then how many other problems the file has."""
    errors = exc.errors()
    unknown = [error for error in errors if error["type"] == "extra_forbidden"]
    first = (unknown or errors)[0]
    path = [where] if where else []
    path += [str(part) for part in first["loc"]]
    others = len(errors) - 1  # the kernel imports no domain helper: the plural by hand
    more = f" (and {others} other problem{'s' if others > 1 else ''})" if others else ""
    said = first["msg"]
    if first["type"] == "extra_forbidden":
        said = f"unknown key {path[-1]!r}, no such setting here (misspelt?)"
    return f"{source}: {'.'.join(path)}: {said}{more}"


DEFAULT_POLICY = PolicyFile()
