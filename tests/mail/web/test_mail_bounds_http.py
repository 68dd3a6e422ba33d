"""The mail bounds at the HTTP edge: a header bomb posted to ``POST /api/v1/mail/drafts`` is a
one-line 400, answered at once and without the server growing, and the settings reach the route.
(The bombs themselves, under a memory ceiling: ``unit/test_mail_bounds.py``.)"""

from __future__ import annotations

import resource
import time

from test_web_mail import MAILBOX, MailSite, post_draft, site

pytest_plugins = ["fixtures_web"]
__all__ = ["site"]  # the fixture, shared with test_web_mail

HEAD = "From: Kim <kim@customer.example>\nTo: support@acme.example\nMessage-ID: <b@c.example>\n"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_an_encoded_word_bomb_is_a_400_at_once_without_growing_the_server(site: MailSite) -> None:
    # 6,000 words (84 KB): the unbounded parser grew by ~300 MB on it and made a draft (201).
    bomb = HEAD + "Subject: " + " ".join(["=?utf-8?q?a?="] * 6000) + "\n\nhelp\n"
    before, started = _peak_mb(), time.monotonic()
    answer = post_draft(site, site.world.requester_token, request=bomb)
    assert answer.status_code == 400, answer.text
    detail = answer.text
    assert "header is over" in detail and "\\n" not in detail
    assert time.monotonic() - started < 10
    assert _peak_mb() - before < 100


def test_many_mime_parts_are_a_400_and_a_normal_request_still_drafts(site: MailSite) -> None:
    parts = "".join(f"--w\nContent-Type: text/plain\n\npart {n}\n" for n in range(300))
    wide = HEAD + "Subject: s\nContent-Type: multipart/mixed; boundary=w\n\n" + parts + "--w--\n"
    answer = post_draft(site, site.world.requester_token, request=wide)
    assert answer.status_code == 400 and "more than 200 MIME parts" in answer.text
    assert post_draft(site, site.world.requester_token).status_code == 201


def test_the_draft_form_refuses_the_bomb_in_one_line_and_makes_no_draft(site: MailSite) -> None:
    """The /mail/drafts form reaches the same parser as the API, with the same bounds."""
    bomb = HEAD + "Subject: " + " ".join(["=?utf-8?q?a?="] * 6000) + "\n\nhelp\n"
    rita = site.as_(site.world.requester_token)
    before = _drafts(site)
    answer = site.client.post(
        "/mail/drafts", data={"mailbox": MAILBOX, "source": bomb}, headers=rita
    )
    assert answer.status_code == 400, answer.text[:300]
    assert "header is over" in answer.text
    assert _drafts(site) == before


def _drafts(site: MailSite) -> int:
    with site.app.db.owner_connection() as conn:
        row = conn.execute("SELECT count(*) AS n FROM mail_drafts").fetchone()
    assert row is not None
    return int(row["n"])
