"""The principal of the stdio server: the API token in RESOLVEFLOW_TOKEN (as for the CLI),
looked up again at each call, so a revoked token stops working at once."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from resolveflow.accounts.auth import authenticate
from resolveflow.bootstrap.app import App
from resolveflow.domain.records import Principal


class EnvironmentWho:
    def __init__(self, app: App) -> None:
        self.app = app

    def check(self) -> Principal:
        token = self.app.settings.cli.token
        return authenticate(self.app.db, token.get_secret_value() if token else None)

    def __call__(self, ctx: Context) -> Principal:
        return self.check()
