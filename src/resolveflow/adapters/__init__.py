"""One module per outside system, each behind a small protocol."""
