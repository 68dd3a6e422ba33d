"""Preparing an issue from a tenant's configuration: ``issues prepare``, and later the planner's
``prepare_issue`` tool and the ask page's "Open an issue from this answer" button.

Only the title and the description are free text. The project comes from the tenant's alias (its
forge, and for GitLab the project's id and path as GitLab reports them), the labels must be among
the alias's allowed ones (and exist on the project), and each assignee name maps to a user id (or
a GitHub login) through the alias's map. Nothing named in free text can reach another project or
person. The result is an ordinary proposal, waiting in the inbox for a person's approval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from resolveflow.domain.counted import plural
from resolveflow.domain.records import Principal, Role
from resolveflow.domain.vocabulary import PREPARED_ISSUE_NOTE_PREFIX
from resolveflow.errors import InvalidInput, NotAuthorized, PolicyViolation
from resolveflow.gate import proposals
from resolveflow.gate.domain.actions import build_issue_create, parse_action
from resolveflow.gate.domain.quiet import QuietRules
from resolveflow.gate.kinds.gitlab_issue_create import GitLabAccess
from resolveflow.gate.quiet import Quiet
from resolveflow.policy_file import PolicyFile, ProjectAlias
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database


@dataclass(frozen=True)
class IssueTargets:
    """Where prepared issues may go: the policy file's aliases, and GitLab per tenant."""

    policy: Callable[[], PolicyFile]
    gitlab: GitLabAccess
    quiet_rules: QuietRules = field(default_factory=QuietRules)  # RESOLVEFLOW_SUGGESTIONS_*


def _tenant_name(db: Database, principal: Principal) -> str:
    with db.unscoped() as conn:
        for tenant in tenant_store.list_tenants(conn):
            if tenant.id == principal.tenant_id:
                return tenant.name
    raise InvalidInput("no such tenant")


def _resolve_alias(targets: IssueTargets, tenant: str, alias: str) -> ProjectAlias:
    known = targets.policy().projects(tenant)
    found = known.get(alias.strip())
    if found is None:
        names = ", ".join(sorted(known)) or "none configured"
        raise InvalidInput(f"unknown project alias {alias!r} for tenant {tenant} (known: {names})")
    return found


def _check_labels(alias_name: str, alias: ProjectAlias, labels: Sequence[str]) -> list[str]:
    wanted = sorted({label.strip() for label in labels if label.strip()})
    refused = [label for label in wanted if label not in alias.labels]
    if refused:
        allowed = ", ".join(alias.labels) or "none"
        raise InvalidInput(
            f"label {refused[0]!r} is not allowed for project {alias_name} (allowed: {allowed})"
        )
    return wanted


def _check_names(alias_name: str, alias: ProjectAlias, names: Sequence[str]) -> list[str]:
    wanted = sorted({name.strip().removeprefix("@").lower() for name in names if name.strip()})
    mapped = {name.lower() for name in alias.assignees}
    unknown = [name for name in wanted if name not in mapped]
    if unknown:
        known = ", ".join(sorted(alias.assignees)) or "none"
        raise InvalidInput(
            f"unknown assignee {unknown[0]!r} for project {alias_name} (known: {known})"
        )
    return wanted


def _gitlab_action(
    targets: IssueTargets,
    principal: Principal,
    alias: ProjectAlias,
    title: str,
    body: str,
    labels: list[str],
    names: list[str],
) -> Any:
    client = targets.gitlab.client_for(principal.tenant_id)
    project = client.project(alias.project)
    if labels:
        missing = sorted(set(labels) - set(client.project_labels(project.id)))
        if missing:
            raise PolicyViolation(
                f"{plural(len(missing), 'label')} {', '.join(missing)} "
                f"{plural(len(missing), 'does', 'do')} not exist on GitLab project {project.path}"
            )
    by_name = {name.lower(): value for name, value in alias.assignees.items()}
    people = []
    for name in names:
        value = by_name[name]
        user_id = value if isinstance(value, int) else client.user_id(value)
        if user_id is None:
            raise InvalidInput(
                f"assignee {name!r} maps to GitLab user {value!r}, who does not exist"
            )
        people.append({"name": name, "id": user_id})
    return parse_action(
        {
            "kind": "gitlab.issue_create",
            "target": {"project_id": project.id, "project": project.path},
            "title": title,
            "description": body,
            "labels": labels,
            "assignees": people,
        }
    )


def prepare_issue(
    db: Database,
    principal: Principal,
    targets: IssueTargets,
    *,
    alias: str,
    title: str,
    body: str,
    labels: Sequence[str] = (),
    assignees: Sequence[str] = (),
) -> dict[str, Any]:
    """Resolve ``alias``, labels and assignees from the tenant's configuration and propose the
    issue; the proposal's view (as ``proposals show``), waiting for approval."""
    if not principal.has(Role.REQUESTER):
        raise NotAuthorized(f"{principal.subject} does not have the requester role")
    tenant = _tenant_name(db, principal)
    resolved = _resolve_alias(targets, tenant, alias)
    wanted_labels = _check_labels(alias, resolved, labels)
    names = _check_names(alias, resolved, assignees)
    if resolved.forge == "gitlab":
        action = _gitlab_action(targets, principal, resolved, title, body, wanted_labels, names)
    else:
        logins_by_name = {name.lower(): str(login) for name, login in resolved.assignees.items()}
        logins = [logins_by_name[name] for name in names]
        action = build_issue_create(resolved.project, title, body, wanted_labels, logins)
    note = f"{PREPARED_ISSUE_NOTE_PREFIX}{alias}"
    quiet = Quiet(targets.policy(), targets.quiet_rules)
    proposal = proposals.create_prepared_proposal(db, principal, action, note, quiet)
    return proposals.describe(db, principal, proposal.id)
