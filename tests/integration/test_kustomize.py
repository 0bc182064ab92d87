"""deploy/ as a kustomize base with overlays (issue #33 item 5), rendered by the real kubectl.

``deploy/base`` renders the manifests ``kubectl apply -f deploy/crds -f deploy/controller-manager/``
applies with the controller-manager unsharded (2 replicas, one leading), so its RBAC is what the
controllers declare, no more; ``overlays/sharded`` renders exactly those files; the other
overlays add Karmada's admission webhook (with the webhook's own declared RBAC) and the opt-in
Secrets role. The real apiserver accepts every object of each render (a server-side dry run), and
of deploy/agent's (for a member; tests/unit/test_agent_deploy.py checks its content).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.detector import TEMPLATE_VERBS
from controllers.rbac import Grant, granted, problems, required
from controllers.webhook import PERMISSIONS as WEBHOOK_PERMISSIONS
from testenv import ControlPlane, find_binaries
from testenv.certs import CertificateAuthority

pytestmark = pytest.mark.asyncio(loop_scope="session")

DEPLOY = Path(__file__).parents[2] / "deploy"
WEBHOOK_ACCOUNT = ("karmada-system", "reconcile-webhook")
Obj = dict[str, Any]


async def _render(host: ControlPlane, directory: str) -> list[Obj]:
    done = await host.kubectl("kustomize", str(DEPLOY / directory))
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _files(*patterns: str) -> list[Obj]:
    documents: list[Obj] = []
    for pattern in patterns:
        for path in sorted(DEPLOY.glob(pattern)):
            documents += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return documents


def _keyed(documents: list[Obj]) -> dict[tuple[str, str, str, str], Obj]:
    return {
        (d["apiVersion"], d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
        for d in documents
    }


async def test_the_sharded_overlay_renders_what_kubectl_apply_f_applies(host: ControlPlane) -> None:
    rendered = await _render(host, "overlays/sharded")
    assert _keyed(rendered) == _keyed(_files("crds/*.yaml", "controller-manager/*.yaml"))


async def test_the_base_is_the_same_unsharded_with_exactly_the_declared_rbac(
    host: ControlPlane,
) -> None:
    rendered, files = (
        _keyed(await _render(host, "base")),
        _keyed(_files("crds/*.yaml", "controller-manager/*.yaml")),
    )
    key = ("apps/v1", "Deployment", "karmada-system", "reconcile-controller-manager")
    base, sharded = rendered.pop(key), files.pop(key)
    assert rendered == files
    assert base["spec"]["replicas"] == 2
    container = base["spec"]["template"]["spec"]["containers"][0]
    assert "--shards=auto" not in container["command"]
    assert "--leader-elect" in container["command"]
    shipped = sharded["spec"]["template"]["spec"]["containers"][0]["command"]
    assert container["command"] == [arg for arg in shipped if arg != "--shards=auto"]
    manifests = [*rendered.values(), base]
    assert granted(manifests) == required()
    assert problems(granted(manifests)) == []


async def test_the_webhook_overlay_adds_the_webhook_with_its_declared_rbac(
    host: ControlPlane,
) -> None:
    base, overlay = await _render(host, "base"), await _render(host, "overlays/webhook")
    assert _keyed(overlay) == _keyed(base) | _keyed(_files("webhook/*.yaml"))
    wanted = {grant for rule in WEBHOOK_PERMISSIONS.rules for grant in rule.grants()}
    assert granted(overlay, WEBHOOK_ACCOUNT) == wanted
    assert granted(overlay) == granted(base), "the controller-manager gains nothing"


async def test_the_secrets_overlay_adds_only_the_opt_in_role(host: ControlPlane) -> None:
    base = await _render(host, "base")
    overlay = await _render(host, "overlays/propagate-secrets")
    added = granted(overlay) - granted(base)
    assert added == {Grant("", "", "secrets", verb) for verb in TEMPLATE_VERBS}


@pytest.mark.parametrize(
    "directory",
    ["base", "overlays/sharded", "overlays/webhook", "overlays/propagate-secrets", "agent"],
)
async def test_the_apiserver_accepts_every_object_rendered(
    host: ControlPlane, directory: str
) -> None:
    # A dry run creates nothing, so the namespaces the objects go into must exist already.
    for namespace in ("karmada-system", "karmada-cluster"):
        await host.kubectl("create", "namespace", namespace, check=False)
    rendered = (await host.kubectl("kustomize", str(DEPLOY / directory))).stdout
    # The webhook configurations' caBundle is the user's CA, put in as docs/multicluster.md says.
    ca = base64.b64encode(CertificateAuthority("kustomize-test").cert_pem)
    filled = rendered.replace(b"CA_BUNDLE", ca)
    # Other tests of the session may have written some of these objects already.
    done = await host.kubectl(
        "apply", "--dry-run=server", "--server-side", "--force-conflicts", "-f", "-",
        input=filled, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert done.stdout.count(b"(server dry run)") == len(await _render(host, directory))


async def test_kubectl_is_the_one_testenv_provides(host: ControlPlane) -> None:
    # The renders above use the kubectl built with kube-apiserver (TESTENV.md), not one on PATH.
    assert host.kubectl_binary == find_binaries().kubectl
