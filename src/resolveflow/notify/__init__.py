"""Notifications (issue 32, part 4): a chat webhook (Slack-compatible) or a signed JSON webhook is
told when a proposal waits for a decision and again before its approval window closes, with what
is proposed in a line and the inbox link; never an approval, which stays bound to the digest in
the inbox. ``domain/`` composes the messages; ``store/`` holds the delivery rows;
``notifier.py`` is the worker's round (scan, send, record). Nothing in the gate imports this:
the round finds waiting proposals by scanning, so proposing never waits on a webhook.
"""
