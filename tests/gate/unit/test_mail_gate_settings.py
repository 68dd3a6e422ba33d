"""The gate's settings when mail is configured: one attempt's window and the lease cover the
slowest SMTP send (every try to its deadline, the delays between, the QUIT)."""

from __future__ import annotations

from resolveflow.adapters.smtp.protocol import SmtpEndpoint
from resolveflow.bootstrap.mail import QUIT_SECONDS, widen_for_mail, worst_case_seconds
from resolveflow.config import MailSettings
from resolveflow.gate.lease import GateSettings


def test_the_attempt_window_and_the_lease_cover_the_slowest_send() -> None:
    mail = MailSettings(deadline_seconds=120, retries=2, retry_delay_seconds=10)
    assert worst_case_seconds(mail) == 3 * 120 + 2 * 10 + QUIT_SECONDS
    endpoint = SmtpEndpoint("h", 587, deadline_seconds=120, retries=2, retry_delay_seconds=10)
    assert endpoint.worst_case_seconds == 3 * 120 + 2 * 10
    gate = widen_for_mail(GateSettings(lease_seconds=60, send_slack_seconds=10), mail)
    assert gate.request_deadline_seconds == worst_case_seconds(mail)
    assert gate.in_flight_seconds >= worst_case_seconds(mail)
    assert gate.lease_seconds >= gate.in_flight_seconds


def test_longer_settings_are_kept() -> None:
    fast = MailSettings(deadline_seconds=1, retries=0, retry_delay_seconds=0)
    gate = GateSettings(lease_seconds=600, request_deadline_seconds=100)
    assert widen_for_mail(gate, fast) == gate
