"""Command runs ``reconcile webhook``: Karmada's admission webhook as a process of its own.

Like karmada-webhook it serves HTTPS on ``--bind-address``:``--secure-port`` (0.0.0.0:8443) with
the certificate ``--tls-cert-file-name``/``--tls-private-key-file-name`` (tls.crt/tls.key) from
``--cert-dir`` (/tmp/k8s-webhook-server/serving-certs, where deploy/webhook mounts its Secret),
re-read when the files change; it reads the host through ``--kubeconfig`` (in-cluster by default)
for what validation needs to look up (the other interpreter customizations, the Secrets Clusters
name in the cluster namespace). It needs no leader election: every replica answers.
``run_webhook`` is what the command runs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Final

from controllers.cluster.connection import MemberOptions
from controllers.webhook.kinds import register_webhooks
from reconcile import Manager, ManagerOptions
from reconcile.webhook import DEFAULT_CERT_DIR, WebhookServer

__all__ = ["DEFAULT_BIND_ADDRESS", "DEFAULT_SECURE_PORT", "WebhookOptions", "run_webhook"]

DEFAULT_BIND_ADDRESS: Final = "0.0.0.0"
"""karmada-webhook's ``--bind-address``."""
DEFAULT_SECURE_PORT: Final = 8443
"""karmada-webhook's ``--secure-port``."""


@dataclass(frozen=True)
class WebhookOptions:
    """Where and with which certificate the webhook serves (karmada-webhook's flags)."""

    bind_address: str = DEFAULT_BIND_ADDRESS
    """The address to listen on. Defaults to 0.0.0.0."""
    secure_port: int = DEFAULT_SECURE_PORT
    """The HTTPS port; 0 picks a free one. Defaults to 8443."""
    cert_dir: str = DEFAULT_CERT_DIR
    """The directory of the serving certificate. Defaults to controller-runtime's."""
    cert_name: str = "tls.crt"
    """The certificate's file name. Defaults to tls.crt."""
    key_name: str = "tls.key"
    """The key's file name. Defaults to tls.key."""

    def server(self) -> WebhookServer:
        """A webhook server with these options."""
        return WebhookServer(
            host=self.bind_address,
            port=self.secure_port,
            cert_dir=self.cert_dir,
            cert_name=self.cert_name,
            key_name=self.key_name,
        )


async def run_webhook(
    kubeconfig: str | None,
    *,
    context: str | None = None,
    webhook: WebhookOptions | None = None,
    options: ManagerOptions | None = None,
    members: MemberOptions | None = None,
) -> None:
    """Serve Karmada's admission webhooks until SIGTERM/SIGINT.

    ``options`` sets the manager's metrics and health probes (its ``webhook_server`` is replaced
    by one built from ``webhook``); ``members`` must match the controller-manager's flags.

    Raises:
        ConfigError: the kubeconfig is unusable.
    """
    server = (webhook or WebhookOptions()).server()
    chosen = dataclasses.replace(options or ManagerOptions(), webhook_server=server)
    manager = await Manager.from_kubeconfig(kubeconfig, context=context, options=chosen)
    register_webhooks(manager, members=members)
    await manager.run_until_signalled()
