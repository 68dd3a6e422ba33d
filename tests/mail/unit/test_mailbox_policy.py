"""A mailbox in the policy file: mail reads its own section (the file keeps it raw); the Sent
folder must be one IMAP-quotable line, an address is an address, listed once."""

from __future__ import annotations

import pytest

from resolveflow.bootstrap.policy import PRODUCT_SECTIONS
from resolveflow.errors import ConfigError, ResolveFlowError
from resolveflow.mail.domain.mailbox import tenant_mailboxes
from resolveflow.policy_file import parse_policy

BASE = '[tenants.acme.mailboxes."Support@Acme.example"]\nsmtp_host = "smtp.acme.example"\n'


def test_a_mailbox_is_keyed_in_lower_case_with_its_sent_folder() -> None:
    policy = parse_policy(BASE + 'sent_folder = "Sent Items"\nimap_host = "imap.acme.example"\n')
    [(address, mailbox)] = tenant_mailboxes(policy, "acme").items()
    assert address == "support@acme.example" and mailbox.sent_folder == "Sent Items"
    assert tenant_mailboxes(policy, "globex") == {}


@pytest.mark.parametrize("folder", ["Sent\\r\\nA1 CREATE x", "Sent\\n", "Éléments envoyés"])
def test_a_sent_folder_that_imap_cannot_quote_is_refused(folder: str) -> None:
    policy = parse_policy(BASE + f'sent_folder = "{folder}"\n', "policy.toml")
    message = (
        r"policy\.toml: tenants\.acme\.mailboxes\.Support@Acme\.example\.sent_folder: "
        ".*sent_folder must be one line of ASCII"
    )
    with pytest.raises(ResolveFlowError, match=message):
        tenant_mailboxes(policy, "acme")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[tenants.acme.mailboxes."support"]\nsmtp_host = "h"\n', "an address like"),
        (BASE + '[tenants.acme.mailboxes."support@acme.example"]\nsmtp_host = "h"\n', "twice"),
        (BASE + "colour = true\n", r"Support@Acme\.example\.colour"),
    ],
)
def test_a_bad_mailbox_fails_the_load_of_the_file_as_one_clear_error(
    table: str, message: str
) -> None:
    policy = parse_policy(table)  # the kernel keeps mail's section raw
    with pytest.raises(ConfigError, match=rf"^policy: tenants\.acme\.mailboxes.*{message}"):
        tenant_mailboxes(policy, "acme")
    with pytest.raises(ConfigError, match=rf"^policy: tenants\.acme\.mailboxes.*{message}"):
        parse_policy(table, checks=PRODUCT_SECTIONS)  # as the wiring loads it
