"""Webhooks installs admission and conversion webhooks on testenv control planes for a test's
server, like envtest's WebhookInstallOptions.

Given Mutating/ValidatingWebhookConfigurations (files, directories or objects) and CRDs whose
``spec.conversion`` uses a webhook, ``WebhookInstallOptions.install`` generates a CA and a serving
certificate for the local host (127.0.0.1), writes ``tls.crt``/``tls.key`` into a certificate
directory, points every ``clientConfig`` at ``https://<host>:<port><path>`` with that CA as
``caBundle`` (the path is the configuration's ``service.path`` or URL path; a CRD's defaults to
``/convert``), installs them on the control planes and returns where to serve:
``WebhookServing(host, port, cert_dir, ca_pem)``. Run a ``WebhookServer`` there.

Unlike envtest, which waits until the configurations can be read back, ``install`` waits until
the apiserver's admission plugins use them: the apiserver loads configurations through informers,
so for each kind installed it then creates a probe configuration (failurePolicy Fail, pointing at
a closed port, matching only ConfigMaps with a probe label) and makes dry-run ConfigMap creates
until one fails naming the probe; informers deliver in order, so everything installed before the
probe is in use too. The probe is then deleted. CRDs are waited for until discovery serves
every version. ``uninstall`` removes what ``install`` created.
"""

from __future__ import annotations

import base64
import copy
import secrets
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlparse

import anyio

from testenv.controlplane import ControlPlane, RequestError
from testenv.crds import crd_is_served, load_manifests
from testenv.ports import free_port

if TYPE_CHECKING:
    from testenv.certs import CertificateAuthority

__all__ = ["WebhookInstallOptions", "WebhookInstaller", "WebhookServing"]

MUTATING: Final = "MutatingWebhookConfiguration"
VALIDATING: Final = "ValidatingWebhookConfiguration"
CRD: Final = "CustomResourceDefinition"
_REGISTRATION: Final = "/apis/admissionregistration.k8s.io/v1"
_COLLECTIONS: Final = {
    MUTATING: f"{_REGISTRATION}/mutatingwebhookconfigurations",
    VALIDATING: f"{_REGISTRATION}/validatingwebhookconfigurations",
    CRD: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
}
PROBE_LABEL: Final = "testenv.reconcile.io/webhook-probe"

Obj = dict[str, Any]


@dataclass(frozen=True)
class WebhookServing:
    """Where the test's webhook server must listen, and the certificates it serves with."""

    host: str
    port: int
    cert_dir: Path
    """Holds ``tls.crt`` and ``tls.key``, issued by ``ca_pem`` for ``host``."""
    ca_pem: bytes
    """The CA the apiserver trusts for these webhooks (the configurations' caBundle)."""
    ca: CertificateAuthority = field(repr=False)
    """Issues further serving certificates (a test rotating the certificate on disk)."""

    def url(self, path: str) -> str:
        """``https://host:port/path``: the URL the configurations call."""
        return f"https://{self.host}:{self.port}{path}"


@dataclass
class WebhookInstallOptions:
    """What to install and where to serve it (envtest's WebhookInstallOptions).

    Args:
        paths: files or directories of configurations and CRDs (multi-document YAML).
        mutating_webhooks: MutatingWebhookConfiguration objects.
        validating_webhooks: ValidatingWebhookConfiguration objects.
        crds: CustomResourceDefinitions with webhook conversion.
        local_serving_host: the host the apiserver calls. Defaults to "127.0.0.1".
        local_serving_port: the port. Defaults to None: a free one.
        local_serving_cert_dir: where the certificate goes. Defaults to None: a new temp dir.
        max_time: seconds to wait until the apiserver uses them all. Defaults to 30.
        poll_interval: seconds between checks. Defaults to 0.1.
    """

    paths: Sequence[Path | str] = ()
    mutating_webhooks: Sequence[Obj] = ()
    validating_webhooks: Sequence[Obj] = ()
    crds: Sequence[Obj] = ()
    local_serving_host: str = "127.0.0.1"
    local_serving_port: int | None = None
    local_serving_cert_dir: Path | None = None
    max_time: float = 30.0
    poll_interval: float = 0.1
    installed: list[tuple[ControlPlane, str, str]] = field(default_factory=list, repr=False)

    def objects(self) -> list[Obj]:
        """Deep copies of every configuration and CRD given, files first.

        Raises:
            ValueError: an object of another kind in ``paths``; a file that is not YAML.
        """
        found = [*load_manifests(self.paths)]
        for obj in found:
            if obj.get("kind") not in _COLLECTIONS:
                raise ValueError(f"not a webhook configuration or CRD: {obj.get('kind')!r}")
        given = [*self.mutating_webhooks, *self.validating_webhooks, *self.crds]
        return [copy.deepcopy(obj) for obj in (*found, *given)]

    async def install(self, planes: Iterable[ControlPlane]) -> WebhookServing:
        """Generate the certificate, install everything on ``planes`` and wait until used.

        Raises:
            TimeoutError: an apiserver did not use a configuration within ``max_time``.
            RequestError: an apiserver refused an object.
        """
        serving = self._serving()
        objects = self.objects()
        ca_bundle = base64.b64encode(serving.ca_pem).decode()
        for obj in objects:
            _rewrite(obj, serving, ca_bundle)
        for plane in planes:
            for obj in objects:
                await _apply(plane, obj)
                self.installed.append((plane, obj["kind"], obj["metadata"]["name"]))
            with anyio.fail_after(self.max_time):
                await self._wait_until_used(plane, objects)
        return serving

    async def uninstall(self) -> None:
        """Delete what ``install`` created (configurations first, then CRDs) and wait until it
        is gone, so installing the same CRD again right after does not race its deletion.

        Raises:
            TimeoutError: still there after ``max_time``.
        """
        order = sorted(self.installed, key=lambda entry: entry[1] == CRD)
        self.installed.clear()
        for plane, kind, name in order:
            path = f"{_COLLECTIONS[kind]}/{name}"
            with anyio.fail_after(self.max_time):
                while await _delete(plane, path):
                    await anyio.sleep(self.poll_interval)

    def _serving(self) -> WebhookServing:
        host = self.local_serving_host
        port = self.local_serving_port or free_port()
        directory = self.local_serving_cert_dir or Path(tempfile.mkdtemp(prefix="testenv-webhook-"))
        directory.mkdir(parents=True, exist_ok=True)
        # Imported here: cryptography is only needed once a test installs webhooks, and
        # ``import testenv`` (which the reconcile CLI does) must not pay for it.
        from testenv.certs import CertificateAuthority

        ca = CertificateAuthority("testenv-webhook-ca")
        ca.issue_serving([host]).write(directory, "tls")
        return WebhookServing(host, port, directory, ca.cert_pem, ca)

    async def _wait_until_used(self, plane: ControlPlane, objects: list[Obj]) -> None:
        for obj in objects:
            if obj["kind"] == CRD:
                while not await crd_is_served(plane.request, obj):
                    await anyio.sleep(self.poll_interval)
        for kind in (MUTATING, VALIDATING):
            if any(obj["kind"] == kind for obj in objects):
                await self._probe(plane, kind)

    async def _probe(self, plane: ControlPlane, kind: str) -> None:
        token = secrets.token_hex(4)
        name = f"testenv-probe-{token}"
        probe = _probe_configuration(kind, name, token)
        await _apply(plane, probe)
        try:
            while not await _rejected_by(plane, token, probe["webhooks"][0]["name"]):
                await anyio.sleep(self.poll_interval)
        finally:
            with anyio.CancelScope(shield=True):
                await plane.request("DELETE", f"{_COLLECTIONS[kind]}/{name}")


def _client_config_url(config: Obj, serving: WebhookServing, default_path: str) -> None:
    service = config.pop("service", None) or {}
    path = service.get("path") or urlparse(str(config.get("url") or "")).path or default_path
    config["url"] = serving.url(path if path.startswith("/") else f"/{path}")


def _rewrite(obj: Obj, serving: WebhookServing, ca_bundle: str) -> None:
    if obj["kind"] == CRD:
        conversion = obj["spec"].get("conversion") or {}
        if conversion.get("strategy") != "Webhook":
            return
        webhook = conversion.setdefault("webhook", {})
        webhook.setdefault("conversionReviewVersions", ["v1"])
        config = webhook.setdefault("clientConfig", {})
        _client_config_url(config, serving, "/convert")
        config["caBundle"] = ca_bundle
        return
    for webhook in obj.get("webhooks") or []:
        config = webhook.setdefault("clientConfig", {})
        _client_config_url(config, serving, "/")
        config["caBundle"] = ca_bundle


async def _apply(plane: ControlPlane, obj: Obj) -> None:
    collection = _COLLECTIONS[obj["kind"]]
    try:
        await plane.request("POST", collection, obj)
    except RequestError as error:
        if error.status != 409:
            raise
        current = await plane.request("GET", f"{collection}/{obj['metadata']['name']}")
        obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await plane.request("PUT", f"{collection}/{obj['metadata']['name']}", obj)
        obj["metadata"].pop("resourceVersion")


async def _delete(plane: ControlPlane, path: str) -> bool:
    """Ask for the deletion of ``path``; whether it still exists (a CRD's finalizer runs)."""
    try:
        await plane.request("DELETE", path)
    except RequestError as error:
        if error.status == 404:
            return False
        raise
    return True


def _probe_configuration(kind: str, name: str, token: str) -> Obj:
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"]}
    webhook = {
        "name": f"{name}.testenv.reconcile.io",
        # Nothing listens there: the call fails at once, naming the webhook, which is the sign.
        "clientConfig": {"url": f"https://127.0.0.1:{free_port()}/probe"},
        "rules": [{**rule, "resources": ["configmaps"], "scope": "Namespaced"}],
        "objectSelector": {"matchLabels": {PROBE_LABEL: token}},
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 2,
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [webhook],
    }


async def _rejected_by(plane: ControlPlane, token: str, webhook: str) -> bool:
    """Whether a dry-run ConfigMap create with the probe label fails naming ``webhook``."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"generateName": "testenv-probe-", "labels": {PROBE_LABEL: token}},
    }
    try:
        await plane.request("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", body)
    except RequestError as error:
        return webhook in str(error.body)
    return False


class WebhookInstaller:
    """What the ``webhooks`` fixture hands a test: installs on the host (or the planes given)
    and removes everything it installed when the test ends."""

    def __init__(self, default: ControlPlane) -> None:
        self._default = default
        self._done: list[WebhookInstallOptions] = []

    async def install(
        self, options: WebhookInstallOptions, *planes: ControlPlane
    ) -> WebhookServing:
        """``options.install`` on ``planes`` (default: the host); see WebhookInstallOptions."""
        self._done.append(options)
        return await options.install(planes or (self._default,))

    async def uninstall(self) -> None:
        """Uninstall everything installed through this installer."""
        for options in reversed(self._done):
            await options.uninstall()
        self._done.clear()
