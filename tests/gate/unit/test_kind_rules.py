"""The gate's reading rules per kind (gate/kind_rules.py): a product's kind whose rules were not
installed in this process is read by no one (hidden in lists, refused when asked for), the
gate's own kinds are read by the tenant, and one kind's rules cannot be installed twice."""

from __future__ import annotations

from typing import Any

import pytest

from resolveflow.errors import NotAuthorized
from resolveflow.gate import kind_rules
from resolveflow.gate.domain.actions import ActionKind

EMAIL = {"kind": ActionKind.EMAIL_SEND.value, "mailbox": "support@acme.example"}
COMMENT = {"kind": ActionKind.GITHUB_ISSUE.value, "repository": "acme/widgets"}


@pytest.fixture
def without_mail_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(kind_rules._installed, ActionKind.EMAIL_SEND.value, raising=False)


def test_a_kind_without_installed_rules_is_hidden_and_refused(without_mail_rules: None) -> None:
    readers = kind_rules.readers(None, None)  # type: ignore[arg-type]
    assert not readers.may_read(EMAIL)
    assert "no reading rules for email.send" in readers.hidden(EMAIL)
    with pytest.raises(NotAuthorized, match=r"no reading rules for email\.send"):
        kind_rules.require_readable(None, None, EMAIL)  # type: ignore[arg-type]
    assert readers.may_read(COMMENT)  # the gate's own kinds: the tenant bounds the read
    kind_rules.require_readable(None, None, COMMENT)  # type: ignore[arg-type]


def test_the_wiring_installs_mails_rules_and_a_second_set_is_refused() -> None:
    import resolveflow.bootstrap.app  # noqa: F401 - importing the wiring installs the rules

    installed: Any = kind_rules._installed[ActionKind.EMAIL_SEND.value]
    assert installed.kind is ActionKind.EMAIL_SEND
    kind_rules.install([installed])  # the same rules again are fine

    class Other:
        kind = ActionKind.EMAIL_SEND

    with pytest.raises(RuntimeError, match="installed twice"):
        kind_rules.install([Other()])  # type: ignore[list-item]
