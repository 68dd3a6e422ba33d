"""The products' sections of the policy file, for the wiring: the kernel's ``policy_file`` keeps
them raw and imports no product, so whoever loads the whole file passes these checks to
``parse_policy``, and a bad mailbox or refine block fails the load as it always did."""

from __future__ import annotations

from resolveflow.gate.domain.quiet import check_suggestions
from resolveflow.mail.domain.mailbox import check_mailboxes
from resolveflow.policy_file import SectionCheck
from resolveflow.refine.domain.rules import check_refine

# The gate's ``suggestions`` tables too: the gate reads them when a product's proposal is recorded.
PRODUCT_SECTIONS: tuple[SectionCheck, ...] = (check_mailboxes, check_refine, check_suggestions)
