"""``python -m resolveflow`` runs the CLI."""

from resolveflow.cli import entrypoint

entrypoint()
