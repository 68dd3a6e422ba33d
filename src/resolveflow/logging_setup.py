"""Logging to stderr with structured fields rendered as key=value; secrets are never passed in."""

from __future__ import annotations

import logging

from resolveflow.telemetry import TraceIdFilter

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = super().format(record)
        fields = {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if not fields:
            return base
        return base + " " + " ".join(f"{key}={value}" for key, value in sorted(fields.items()))


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(KeyValueFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(TraceIdFilter())  # trace_id=... on every line written inside a trace
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper() if level.upper() in logging.getLevelNamesMapping() else "WARNING")
    # Third-party chatter (pgserver, httpx) stays quiet unless asked for explicitly.
    for noisy in ("pgserver", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(root.level, logging.WARNING))
