"""A mailbox in the policy file: its Sent folder must be one IMAP-quotable line."""

from __future__ import annotations

import pytest

from resolveflow.errors import ResolveFlowError
from resolveflow.policy_file import parse_policy

BASE = '[tenants.acme.mailboxes."Support@Acme.example"]\nsmtp_host = "smtp.acme.example"\n'


def test_a_mailbox_is_keyed_in_lower_case_with_its_sent_folder() -> None:
    policy = parse_policy(BASE + 'sent_folder = "Sent Items"\nimap_host = "imap.acme.example"\n')
    [(address, mailbox)] = policy.mailboxes("acme").items()
    assert address == "support@acme.example" and mailbox.sent_folder == "Sent Items"


@pytest.mark.parametrize("folder", ["Sent\\r\\nA1 CREATE x", "Sent\\n", "Éléments envoyés"])
def test_a_sent_folder_that_imap_cannot_quote_is_refused(folder: str) -> None:
    with pytest.raises(ResolveFlowError, match="sent_folder must be one line of ASCII"):
        parse_policy(BASE + f'sent_folder = "{folder}"\n')
