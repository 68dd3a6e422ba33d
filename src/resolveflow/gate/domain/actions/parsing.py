"""The registered kinds and parsing untrusted action data into one of them."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter

# The kinds' names live with the domain's other words, so that code which only names a kind (the
# kinds' read rules every command installs) does not import every action model.
from resolveflow.domain.vocabulary import ActionKind
from resolveflow.errors import InvalidInput
from resolveflow.gate.domain.actions.email_send import EmailSendAction
from resolveflow.gate.domain.actions.github_issue import GitHubIssueAction
from resolveflow.gate.domain.actions.github_issue_close_duplicate import (
    GitHubIssueCloseDuplicateAction,
)
from resolveflow.gate.domain.actions.github_issue_create import GitHubIssueCreateAction
from resolveflow.gate.domain.actions.gitlab_issue_create import GitLabIssueCreateAction

ACTION_KIND = ActionKind.GITHUB_ISSUE  # the kind triage proposes

AnyAction = (
    GitHubIssueAction
    | GitHubIssueCreateAction
    | GitLabIssueCreateAction
    | EmailSendAction
    | GitHubIssueCloseDuplicateAction
)
Action = Annotated[AnyAction, Field(discriminator="kind")]
_ACTION: TypeAdapter[AnyAction] = TypeAdapter(Action)


def parse_action(data: Any) -> AnyAction:
    """Validate untrusted action data, turning pydantic's report into one readable error.

    Data without a ``kind`` is a ``github.issue`` (the only kind before kinds existed)."""
    if isinstance(data, dict) and "kind" not in data:
        data = {**data, "kind": ActionKind.GITHUB_ISSUE.value}
    try:
        return _ACTION.validate_python(data)
    except ValueError as exc:
        raise InvalidInput(f"invalid action: {_first_error(exc)}") from exc


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        details = errors()
        if details:
            first = details[0]
            loc = [str(part) for part in first.get("loc", ())]
            # A discriminated union prefixes the kind ("github.issue.comment"); drop it.
            if loc and loc[0] in {kind.value for kind in ActionKind}:
                loc = loc[1:]
            where = ".".join(loc)
            message = str(first.get("msg", exc)).removeprefix("Value error, ")
            return f"{where}: {message}" if where else message
    return str(exc)
