"""Drafting replies, for the composition root: the principal's tenant's mailboxes from the policy
file, the mail search over the shared index, and the model (budgeted per principal) when one is
configured."""

from __future__ import annotations

from resolveflow.accounts.model_budget import BudgetedModel, ModelCallBudget
from resolveflow.bootstrap.app import App
from resolveflow.domain.records import Principal
from resolveflow.llm.protocol import ChatModel
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.mail.drafts import MailDrafts
from resolveflow.mail.search import MailSearcher
from resolveflow.store import tenants as tenant_store


def mail_drafts(app: App, principal: Principal) -> MailDrafts:
    with app.db.unscoped() as conn:
        names = {t.id: t.name for t in tenant_store.list_tenants(conn)}
    mailboxes = tenant_mailboxes(app.policy(), names.get(principal.tenant_id, ""))
    return MailDrafts(
        app.db,
        mailboxes,
        MailSearcher(app.db, app.embedder()),
        budgeted_model(app, principal),
        quiet=app.quiet(),
    )


def budgeted_model(app: App, principal: Principal) -> ChatModel | None:
    model = app.model()
    if model is None:
        return None
    budget = ModelCallBudget(
        app.db,
        principal.tenant_id,
        app.settings.limits.model_calls_per_day,
        principal_id=principal.id,
    )
    return BudgetedModel(model, budget, principal.subject)
