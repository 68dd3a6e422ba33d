"""Use cases shared by the CLI, the web app and the worker."""
