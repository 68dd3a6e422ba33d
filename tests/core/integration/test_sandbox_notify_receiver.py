"""The sandbox's notification receiver run by hand (``python -m
resolveflow.sandbox.notify_receiver``): it prints its URL, then each delivery with whether its
signature held, and stops on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from resolveflow.adapters.notify_webhook import WebhookSender
from resolveflow.domain.network_addresses import AddressPolicy
from resolveflow.errors import ProviderUnavailable

LOOPBACK = AddressPolicy.parse("127.0.0.1")


def test_the_receiver_as_a_process_checks_and_prints_each_delivery() -> None:
    env = {**os.environ, "RESOLVEFLOW_NOTIFY_SECRET": "k3y"}
    process = subprocess.Popen(
        [sys.executable, "-m", "resolveflow.sandbox.notify_receiver"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        url = json.loads(process.stdout.readline())["url"]
        WebhookSender(url, timeout_seconds=10, policy=LOOPBACK, secret=b"k3y").send(
            b'{"type": "x"}'
        )
        assert json.loads(process.stdout.readline()) == {
            "answered": 200,
            "verified": True,
            "body": {"type": "x"},
        }
        wrong = WebhookSender(url, timeout_seconds=10, policy=LOOPBACK, secret=b"other")
        with pytest.raises(
            ProviderUnavailable, match=r"^the notification was not delivered \(no 2xx answer"
        ):
            wrong.send(b"{}")
        assert json.loads(process.stdout.readline())["verified"] is False
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
