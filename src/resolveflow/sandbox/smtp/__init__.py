"""The sandbox SMTP server: a real SMTP server on 127.0.0.1 (aiosmtpd) for the ``email.send`` kind.

``server.FakeSmtpServer`` records every message it accepted and injects faults per test.
"""
