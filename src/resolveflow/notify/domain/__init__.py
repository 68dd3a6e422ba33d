"""Pure: the message about a waiting proposal, in the Slack and JSON formats, and the retry
schedule."""
