"""Requests for a credential in a reply's text: "send us your password", "reply with the code we
texted you", "what is your PIN?". A past reply that asked for one (an attacker's imported mail,
or a bad habit) must never be reused word for word, and no draft should ask: the draft checks
fail on one (``mail_checks``, check ``credential_request``).

A sentence asks when a disclosing verb (send, tell, give, provide, share, reply with, ...; or
"we need", "what is") is followed within a few words by a credential (password, passcode, PIN,
one-time or verification code, 2FA/MFA code, security answer, card number, CVV, API key,
access token, login details, ...), with no clause boundary ("if", "when", "after", "to", ...)
between them. Not a request: a negation before the verb ("we will never ask for your password",
"do not share your PIN"); the credential as a modifier ("password reset link", "PIN field");
and self-service ("reset your password via the link on the site", "enter the code on the
sign-in page"): the customer tells us nothing. "Confirm"/"verify" ask only when the sentence
says where to (us, me, a reply). Text is read sentence by sentence, folded lines joined.
"""

from __future__ import annotations

import re

_CREDENTIAL = (
    r"(?:pass(?:word|phrase|code|wd)s?|pins?(?:\s+(?:code|number)s?)?|otps?|totp"
    r"|(?:one\s+time|single\s+use)\s+(?:code|password|passcode|pin)s?"
    r"|(?:verification|security|authentication|auth|access|login|log\s+in|sign\s+in|signin"
    r"|sms|text|2fa|mfa|two\s+factor|two\s+step|2\s+step|multi\s+factor|backup|recovery)"
    r"(?:\s+authentication)?\s+codes?"
    r"|\d\s+digit\s+codes?|codes?\s+(?:we|you)\s+(?:sent|texted|emailed|received|got)"
    r"|security\s+answers?|answers?\s+to\s+(?:your|the)\s+security\s+questions?"
    r"|mother'?s\s+maiden\s+name"
    r"|(?:credit\s+|debit\s+|bank\s+|payment\s+)?card\s+(?:numbers?|details)|cvv2?|cvc2?|csc"
    r"|card\s+(?:security|verification)\s+(?:code|value)s?"
    r"|(?:api|secret|private)\s+keys?|client\s+secrets?|(?:seed|recovery)\s+phrases?"
    r"|(?:api|access|auth|authentication|bearer|refresh|session|oauth|personal\s+access)"
    r"\s+tokens?"
    r"|(?:login|log\s+in|sign\s+in|account)\s+(?:details|credentials|info|information)"
    r"|credentials|logins?)"
)
# Words after which the credential names a thing about it, not the secret itself.
_MODIFIED = (
    r"(?!\s+(?:field|box|page|reset|manager|policy|rules?|requirements?|strength|link|prompt"
    r"|screen|form|expir\w*|change|hint|settings|dialog|length|error|name|attempts?|issues?"
    r"|problems?|history|button|process|protection)\b)"
)
# A clause boundary: the verb's object ends before it.
_STOP = (
    r"(?:after|when|whenever|once|if|before|until|unless|so|because|then|since|while|that"
    r"|which|how|where|whether|to|for|about|via|from|reset|change|update|forgot|forgotten"
    r"|forget|lost|create|choose|enter|type|never|not)"
)
_FILLER = rf"(?:[\s:,]+(?!{_STOP}\b)[\w'&]+){{0,5}}?[\s:,]+"
_VERB = (
    r"(?:send|e\s?mail|mail|text|sms|tell|give|provide|share|forward|supply|submit|include"
    r"|attach|disclose|reveal|quote|dictate|read\s+out|let\s+(?:us|me|the\s+team)\s+know"
    r"|(?:reply|respond|write\s+back|get\s+back\s+to\s+(?:us|me))\s+with|ask\s+(?:you\s+)?for"
    r"|(?:we|i|the\s+team|support)(?:'ll|'d|\s+(?:will|would|do|also|still))?"
    r"\s+(?:need|require|must\s+have|request)"
    r"|(?:can|could|may)\s+(?:we|i)\s+(?:have|get|ask\s+for))"
)
_OBJECT = r"(?:\s+(?:it|them|this|that))?(?:\s+(?:to\s+)?(?:us|me|back|over|along))?"
# Where the customer would type it themselves: self-service, nothing is disclosed to us.
_SELF_SERVICE = (
    r"(?!\s+(?:on|at|in|into|via|through|using)\s+(?:the\s+|our\s+|your\s+|this\s+|that\s+)?"
    r"(?:web\s*)?(?:site|website|page|app|application|portal|form|screen|browser|device|phone"
    r"|account|sign\s+in|login|log\s+in|settings|keypad|terminal|machine|atm)\b)"
)
_AFTER = rf"\b{_MODIFIED}{_SELF_SERVICE}"
_ASKS = re.compile(rf"\b{_VERB}{_OBJECT}{_FILLER}{_CREDENTIAL}{_AFTER}")
_CONFIRMS = re.compile(rf"\b(?:confirm|verify){_OBJECT}{_FILLER}{_CREDENTIAL}{_AFTER}")
_WHERE_TO = re.compile(r"\b(?:us|me|reply|respond|e\s?mail|back)\b")
_QUESTION = re.compile(
    rf"\bwhat(?:'s|\s+is|\s+was|\s+are)\s+(?:your|the)(?:\s+[\w']+){{0,3}}?\s+{_CREDENTIAL}"
    rf"{_AFTER}"
)
_PLEASE = re.compile(rf"\b(?:your|the)\s+{_CREDENTIAL}\s*,?\s+please\b")
# "don't forget to send ...", "do not hesitate to send ...": not negations.
_NOT_NEGATING = re.compile(r"\b(?:do\s+not|don't|dont)\s+(?:forget|hesitate|wait)\b")
_NEGATION = re.compile(
    r"\b(?:never|not|no\s+one|nobody|neither|nor|don't|dont|won't|can't|cannot|shouldn't"
    r"|mustn't|doesn't|didn't)\b(?:\s+[\w'-]+){0,6}?\s*$"
)
# Every credential above contains one of these: a sentence without any is skipped.
_HINT = re.compile(
    r"pass|pin|otp|code|answer|maiden|card|cvv|cvc|csc|key|secret|phrase|token|login|log in"
    r"|sign in|credential|account"
)
_SENTENCE_END = re.compile(r"[.!?;]+(?:\s|$)|\n\s*\n")
_MAX_SENTENCE_CHARS = 2000  # longer runs are read in pieces: no regex runs on a megabyte


def credential_requests(text: str) -> list[str]:
    """The phrases in ``text`` that ask the reader for a credential, each once, in order."""
    found: dict[str, None] = {}
    for sentence in _sentences(text):
        if not _HINT.search(sentence):  # most sentences name no credential: one cheap scan
            continue
        for pattern in (_ASKS, _QUESTION, _PLEASE, _CONFIRMS):
            for match in pattern.finditer(sentence):
                if pattern is _CONFIRMS and not _WHERE_TO.search(sentence):
                    continue
                before = _NOT_NEGATING.sub(" ", sentence[: match.start()])
                if pattern is not _PLEASE and _NEGATION.search(before):
                    continue
                found[match.group(0).strip()] = None
    return list(found)


def _sentences(text: str) -> list[str]:
    normal = text.lower().replace("’", "'").replace("‘", "'")
    normal = re.sub(r"[-‐‑–—_/]", " ", normal)  # one-time, e-mail, sign-in, 2-step, log-in
    sentences = []
    for part in _SENTENCE_END.split(normal):
        line = " ".join(part.split())
        for start in range(0, len(line), _MAX_SENTENCE_CHARS):
            sentences.append(line[start : start + _MAX_SENTENCE_CHARS])
    return sentences
