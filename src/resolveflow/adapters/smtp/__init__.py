"""SMTP through aiosmtplib: the one write the ``email.send`` kind needs (docs/email.md)."""
