"""What every command needs: settings, an opened app, the acting principal, the tenant."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import UUID

import typer

from resolveflow.accounts import admin
from resolveflow.accounts.auth import authenticate
from resolveflow.bootstrap.app import App, open_app
from resolveflow.config import Settings, load_settings
from resolveflow.domain.records import Principal
from resolveflow.errors import InvalidInput, NotFound
from resolveflow.gate import ids

JsonOption = typer.Option(False, "--json", help="Print exactly one JSON document on stdout.")
TokenOption = typer.Option(
    None,
    "--token",
    envvar="RESOLVEFLOW_TOKEN",
    show_envvar=True,
    help="The acting principal's API token.",
)
TenantOption = typer.Option(
    None, "--tenant", help="Tenant name (optional when exactly one tenant exists)."
)


def settings() -> Settings:
    return load_settings()


@contextmanager
def app() -> Iterator[App]:
    with open_app(settings()) as opened:
        yield opened


def principal(opened: App, token: str | None) -> Principal:
    if token is None and opened.settings.cli.token is not None:
        token = opened.settings.cli.token.get_secret_value()
    return authenticate(opened.db, token)


def tenant_name(opened: App, name: str | None) -> str:
    if name is not None:
        return name
    tenants = admin.real_tenants(opened.db)  # an evaluation's scratch tenant is never picked
    if len(tenants) == 1:
        return tenants[0].name
    if not tenants:
        raise NotFound("no tenants yet: run `resolveflow tenants add NAME`")
    raise InvalidInput("several tenants exist: pass --tenant NAME")


def check_id(value: str, *kinds: ids.IdKind) -> ids.IdPrefix:
    """The form of a typed id, checked before anything is opened."""
    return ids.parse_prefix(value, " or ".join(kinds))


def find_id(opened: App, actor: Principal, value: str | ids.IdPrefix, *kinds: ids.IdKind) -> UUID:
    """The id of ``kinds`` that ``value`` (a full id or a unique prefix of 8+ characters) names
    in the actor's tenant."""
    return ids.resolve(opened.db, actor, value, kinds)


def read_text_file(path: Path) -> str:
    if str(path) == "-":
        return typer.get_text_stream("stdin").read()
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {path}") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None
