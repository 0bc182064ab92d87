"""Webhook is Karmada's admission webhook on reconcile's webhook framework: defaults and validation.

It does what karmada-webhook does that users see, for the kinds of policy.karmada.io,
work.karmada.io, cluster.karmada.io and config.karmada.io (``kinds.ADMITTED``): permanent ids and
Karmada's defaults on policies (``propagation``, ``override``), bindings and Works (``work``),
and refusing at ``kubectl apply`` what the controllers could not use (``propagation``,
``placement``, ``override``, ``cluster``, ``config``), each refusal naming the field as
apimachinery does (``fields``). The detector keeps its own checks for hosts without the webhook.

It runs as ``reconcile webhook`` (``command``, deploy/webhook), or inside the controller-manager
as the ``webhook`` controller when asked (``--controllers=*,webhook``; ``setup``), serving on the
manager's webhook server (controller-runtime's defaults: port 9443, the certificate in
``/tmp/k8s-webhook-server/serving-certs``).
"""

from typing import Final

from controllers.api import KARMADA_CLUSTER_NAMESPACE
from controllers.context import Context
from controllers.rbac import Permissions, Rule, cache
from controllers.webhook.command import (
    DEFAULT_BIND_ADDRESS,
    DEFAULT_SECURE_PORT,
    WebhookOptions,
    run_webhook,
)
from controllers.webhook.fields import Refused
from controllers.webhook.kinds import ADMITTED, AdmittedKind, register_webhooks

__all__ = [
    "ADMITTED",
    "DEFAULT_BIND_ADDRESS",
    "DEFAULT_SECURE_PORT",
    "PERMISSIONS",
    "AdmittedKind",
    "Refused",
    "WebhookOptions",
    "register_webhooks",
    "run_webhook",
    "setup",
]

PERMISSIONS: Final = Permissions(
    rules=(
        cache(
            "config.karmada.io",
            "resourceinterpretercustomizations",
            why="customization conflicts: the other customizations (cache)",
        ),
        Rule(
            ("",),
            ("secrets",),
            ("get",),
            "Cluster secretRef: is the Secret bound to another Cluster (a live read); "
            "cluster namespace only",
            namespace=KARMADA_CLUSTER_NAMESPACE,
        ),
    )
)
"""What the webhook reads on the host, in the controller-manager or as ``reconcile webhook``."""


def setup(context: Context) -> None:
    """Register Karmada's admission webhooks on the controller-manager's webhook server, with its
    member options (which Cluster endpoints and Secret namespaces it accepts)."""
    register_webhooks(context.manager, members=context.members.options)
