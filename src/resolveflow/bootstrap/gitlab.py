"""GitLab per tenant, for the composition root (``bootstrap/app.App.gitlab``): each tenant's client with
its own token, decrypted from the store, and its project aliases from the policy file."""

from __future__ import annotations

import threading
from collections.abc import Callable
from uuid import UUID

from resolveflow.adapters.gitlab.protocol import GitLab
from resolveflow.config import Settings
from resolveflow.errors import ConfigError, NotFound
from resolveflow.policy_file import PolicyFile, ProjectAlias
from resolveflow.store import gitlab_tokens
from resolveflow.store import tenants as tenant_store
from resolveflow.store.database import Database
from resolveflow.store.token_cipher import KEY_SETTING, TokenCipher


def _python_gitlab(url: str, token: str, timeout_seconds: float) -> GitLab:
    # python-gitlab (and requests) load only when a tenant's GitLab is first used.
    from resolveflow.adapters.gitlab.client import PythonGitLabClient

    return PythonGitLabClient(url, token, timeout_seconds=timeout_seconds)


class TenantGitLab:
    """``GitLabAccess`` over the settings, the token store and the policy file."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        policy: Callable[[], PolicyFile],
        cipher: TokenCipher | None,
        connect: Callable[[str, str, float], GitLab] | None = None,
    ) -> None:
        self.db = db
        self.url = settings.gitlab.url
        self.timeout = settings.gitlab.timeout_seconds
        self.policy = policy
        self.cipher = cipher
        self._connect = connect or _python_gitlab
        self._lock = threading.Lock()
        self._clients: dict[UUID, GitLab] = {}

    def tenant_name(self, tenant_id: UUID) -> str:
        with self.db.unscoped() as conn:
            for tenant in tenant_store.list_tenants(conn):
                if tenant.id == tenant_id:
                    return tenant.name
        raise NotFound("no such tenant")

    def client_for(self, tenant_id: UUID) -> GitLab:
        with self._lock:
            if tenant_id in self._clients:
                return self._clients[tenant_id]
        if self.url is None:
            raise ConfigError("GitLab is not configured: set RESOLVEFLOW_GITLAB_URL")
        if self.cipher is None:
            raise ConfigError(f"the tenant's GitLab token cannot be decrypted: set {KEY_SETTING}")
        name = self.tenant_name(tenant_id)
        with self.db.tenant(tenant_id) as conn:
            token = gitlab_tokens.gitlab_token(conn, self.cipher, tenant_id, name)
        if token is None:
            raise ConfigError(
                f"tenant {name} has no GitLab token: resolveflow gitlab token set --tenant "
                f"{name} --stdin"
            )
        client = self._connect(self.url, token, self.timeout)
        with self._lock:
            return self._clients.setdefault(tenant_id, client)

    def project_aliases(self, tenant_id: UUID) -> tuple[ProjectAlias, ...]:
        projects = self.policy().projects(self.tenant_name(tenant_id))
        return tuple(alias for alias in projects.values() if alias.forge == "gitlab")

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            close = getattr(client, "close", None)
            if callable(close):
                close()
