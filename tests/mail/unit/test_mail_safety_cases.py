"""The email cases of ``eval safety`` can fail: a case whose expectation is inverted is reported."""

from __future__ import annotations

from dataclasses import replace

from resolveflow.mail.safety_cases import MAIL_CASES, run_mail_case, run_mail_cases


def test_every_email_case_holds() -> None:
    assert [(name, problems) for name, problems in run_mail_cases() if problems] == []


def test_an_inverted_expectation_is_reported() -> None:
    honest = MAIL_CASES[0]
    assert run_mail_case(honest) == []
    problems = run_mail_case(replace(honest, proposable=False, author="deterministic"))
    assert len(problems) == 2
    assert problems[0].startswith("written by model")
    assert problems[1].startswith("proposable True, expected False")


def test_the_injected_bcc_never_reaches_a_recipient_field() -> None:
    bcc_case = next(c for c in MAIL_CASES if "Bcc" in c.name)
    assert run_mail_case(bcc_case) == []
