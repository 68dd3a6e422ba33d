"""The fields an action took from the tenant's policy file, checked again against the policy in
force: by the approval checks (``gate/domain/policy.py``) and by the executor right before the write.

- ``gitlab.issue_create``: its project, labels and assignees all came from one of the tenant's
  project aliases (``service/issues_prepare``). The project must still be an alias's, every
  label still allowed by it, every assignee's name still in its map and mapped to the same GitLab
  user. (A GitHub issue's labels and assignees are free, within an allowlisted repository and its
  labels: those are the GitHub re-checks, in ``policy.py`` and the kinds.)
- ``email.send`` drafted as a reply: its recipients, which mail re-checks
  (``mail/domain/recipients.py``).

A field no longer allowed raises ``PolicyViolation`` naming it: the executor records the
execution as refused, with that reason, and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from resolveflow.domain.counted import plural
from resolveflow.errors import PolicyViolation
from resolveflow.gate.domain.actions import GitLabIssueCreateAction
from resolveflow.policy_file import ProjectAlias

# A username in an alias's assignee map -> its GitLab user id (None: no such user). A read of
# GitLab: the executor passes the tenant's client; the approval checks compare ids only.
UserLookup = Callable[[str], int | None]


def check_gitlab_fields(
    action: GitLabIssueCreateAction,
    aliases: Iterable[ProjectAlias],
    user_id: UserLookup | None = None,
) -> None:
    """Some alias of the tenant for the action's project still allows all of it."""
    project = action.target.project
    candidates = [
        alias
        for alias in aliases
        if alias.forge == "gitlab" and alias.project.lower() == project.lower()
    ]
    if not candidates:
        raise PolicyViolation(
            f"GitLab project {project} is not one of the tenant's project aliases"
        )
    problems = [_alias_problems(action, alias, user_id) for alias in candidates]
    if any(not found for found in problems):
        return
    raise PolicyViolation(f"no longer allowed for GitLab project {project}: {problems[0][0]}")


def _alias_problems(
    action: GitLabIssueCreateAction, alias: ProjectAlias, user_id: UserLookup | None
) -> list[str]:
    found = []
    refused = [label for label in action.labels if label not in alias.labels]
    if refused:
        allowed = ", ".join(alias.labels) or "none"
        found.append(
            f"{plural(len(refused), 'label')} {', '.join(refused)} (allowed now: {allowed})"
        )
    mapped = {
        name.strip().removeprefix("@").lower(): value for name, value in alias.assignees.items()
    }
    for person in action.assignees:
        value = mapped.get(person.name)
        if value is None:
            found.append(f"assignee {person.name} (not in the project's assignee map)")
        elif (isinstance(value, int) and value != person.id) or (
            isinstance(value, str) and user_id is not None and user_id(value) != person.id
        ):
            found.append(f"assignee {person.name} (now maps to another GitLab user)")
    return found
