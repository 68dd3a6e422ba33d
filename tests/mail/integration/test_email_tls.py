"""Sending over STARTTLS and implicit TLS to the sandbox SMTP server with a certificate from a CA
the test makes, trusted through ``RESOLVEFLOW_MAIL_CA_FILE``; password and XOAUTH2 logins; an
untrusted certificate refused with nothing sent."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import World, execution_state
from fixtures_mail import (
    FAST,
    MAILBOX,
    approve,
    email_action,
    executor,
    mailbox_toml,
    make_mail,
    propose,
)
from resolveflow.domain.records import ExecutionState
from resolveflow.mail.store import credentials as mail_credentials
from resolveflow.sandbox.smtp.server import FakeSmtpServer
from resolveflow.store.database import Database

SECRET = "tls-test-secret"
TOKEN = "ya29.test-oauth-access-token"


@dataclass(frozen=True)
class Pki:
    ca_file: Path
    server: ssl.SSLContext


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_pki(folder: Path, label: str) -> Pki:
    """A CA and a server certificate for 127.0.0.1 it signed, written as PEM files."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(f"{label} test CA"))
        .issuer_name(_name(f"{label} test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    ca_file, cert_file, key_file = (folder / f"{label}-{n}.pem" for n in ("ca", "cert", "key"))
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    return Pki(ca_file, server)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), "trusted")


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki-other"), "untrusted")


def send_one(
    db: Database, world: World, smtp: FakeSmtpServer, toml: str, ca: Path, kind: str, secret: str
):  # type: ignore[no-untyped-def]
    mail = make_mail(db, world, toml, settings=FAST.model_copy(update={"ca_file": str(ca)}))
    with db.tenant(world.tenant.id) as conn:
        mail_credentials.save_mailbox_secret(
            conn,
            mail.cipher,
            world.tenant.id,
            MAILBOX,
            kind,
            secret,  # type: ignore[arg-type]
        )
    approved = approve(db, mail, propose(db, mail, email_action()))
    executor(db, mail).run_due()
    return execution_state(db, world, approved.execution.id)


def test_starttls_with_a_password(db: Database, world: World, pki: Pki) -> None:
    with FakeSmtpServer(credentials=(MAILBOX, SECRET), starttls=pki.server) as smtp:
        toml = mailbox_toml("acme", smtp.port, security="starttls", username=MAILBOX)
        after = send_one(db, world, smtp, toml, pki.ca_file, "password", SECRET)
        assert after.state is ExecutionState.SENT, after.detail
        assert [m.message_id for m in smtp.messages] == [after.result_ref]
        assert [mechanism for mechanism, _ in smtp.logins] in (["PLAIN"], ["LOGIN"])


def test_implicit_tls_with_an_xoauth2_token(db: Database, world: World, pki: Pki) -> None:
    with FakeSmtpServer(credentials=(MAILBOX, TOKEN), tls=pki.server) as smtp:
        toml = mailbox_toml("acme", smtp.port, security="tls", username=MAILBOX, auth="xoauth2")
        after = send_one(db, world, smtp, toml, pki.ca_file, "xoauth2", TOKEN)
        assert after.state is ExecutionState.SENT, after.detail
        assert smtp.logins == [("XOAUTH2", MAILBOX)]
        assert len(smtp.messages) == 1


@pytest.mark.parametrize("security", ["starttls", "tls"])
def test_an_untrusted_certificate_is_refused_and_nothing_is_sent(
    db: Database, world: World, pki: Pki, stranger: Pki, security: str
) -> None:
    tls = {"starttls": stranger.server} if security == "starttls" else {"tls": stranger.server}
    with FakeSmtpServer(credentials=(MAILBOX, SECRET), **tls) as smtp:  # type: ignore[arg-type]
        toml = mailbox_toml("acme", smtp.port, security=security, username=MAILBOX)
        after = send_one(db, world, smtp, toml, pki.ca_file, "password", SECRET)
        # Nothing left: the execution waits to be tried again, and nothing reached the server.
        assert after.state is ExecutionState.PENDING, after.detail
        assert "nothing was sent" in (after.detail or "")
        assert smtp.messages == [] and smtp.logins == []


def test_a_wrong_password_is_a_refusal_with_nothing_sent(
    db: Database, world: World, pki: Pki
) -> None:
    with FakeSmtpServer(credentials=(MAILBOX, SECRET), starttls=pki.server) as smtp:
        toml = mailbox_toml("acme", smtp.port, security="starttls", username=MAILBOX)
        after = send_one(db, world, smtp, toml, pki.ca_file, "password", "not-the-secret")
        assert after.state is ExecutionState.FAILED, after.detail
        assert "535" in (after.detail or "") and "not-the-secret" not in (after.detail or "")
        assert smtp.messages == []
