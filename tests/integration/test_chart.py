"""charts/reconcile, with helm built from the Go module proxy (testenv's store), for real.

``helm lint`` passes; ``helm template`` renders the default and the sharded values as the golden
files in tests/data/chart say (``UPDATE_GOLDEN=1`` rewrites them); the rendered RBAC is exactly
what the controllers declare (as for deploy/) and what deploy/'s kustomize base grants; values
the schema or the templates refuse fail at render time with the reason; and on the testenv host
``helm install`` creates every object, ``helm upgrade`` applies changed values, ``helm
uninstall`` removes all but the CRDs. tests/e2e/test_rbac.py runs the controllers under the
chart's RBAC too.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api import crd_paths
from controllers.detector import TEMPLATE_VERBS
from controllers.rbac import Grant, granted, problems, required
from controllers.webhook import PERMISSIONS as WEBHOOK_PERMISSIONS
from reconcile import GVK, Client, NotFound
from testenv import ControlPlane, find_binaries
from testenv.binaries import find_helm
from tests.builders import admin_client

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "reconcile"
GOLDEN = ROOT / "tests" / "data" / "chart"
ACCOUNT = ("karmada-system", "reconcile-controller-manager")
SHARDED = ("--set", "shards=auto", "--set", "replicas=3")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
Obj = dict[str, Any]


def _helm(*args: str, kubeconfig: Path | None = None, check: bool = True) -> str:
    env = {**os.environ, "HELM_CACHE_HOME": "/tmp/helm-cache", "HELM_CONFIG_HOME": "/tmp/helm"}
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    done = subprocess.run(
        [str(find_helm()), *args], capture_output=True, text=True, env=env, check=False
    )
    if check:
        assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"
    return done.stdout if check else done.stderr


def _render(*values: str) -> list[Obj]:
    text = _helm("template", "reconcile", str(CHART), "--namespace", "karmada-system", *values)
    return [d for d in yaml.safe_load_all(text) if d]


def test_helm_lint_passes() -> None:
    _helm("lint", "--strict", str(CHART))


@pytest.mark.parametrize(("name", "values"), [("default", ()), ("sharded", SHARDED)])
def test_the_render_is_the_golden_one(name: str, values: tuple[str, ...]) -> None:
    text = _helm("template", "reconcile", str(CHART), "--namespace", "karmada-system", *values)
    golden = GOLDEN / f"{name}.yaml"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text(), f"rendered {name} differs; UPDATE_GOLDEN=1 to accept"


@pytest.mark.parametrize("values", [(), SHARDED], ids=["default", "sharded"])
def test_the_rendered_rbac_is_exactly_what_the_controllers_declare(values: tuple[str, ...]) -> None:
    given, wanted = granted(_render(*values), ACCOUNT), required()
    assert given - wanted == set(), "granted by the chart, declared by no controller"
    assert wanted - given == set(), "declared, not granted by the chart"
    assert problems(given) == []


def test_the_chart_and_the_kustomize_base_grant_the_same() -> None:
    base = subprocess.run(
        [str(find_binaries().kubectl), "kustomize", str(ROOT / "deploy" / "base")],
        capture_output=True,
        text=True,
        check=True,
    )
    kustomized = [d for d in yaml.safe_load_all(base.stdout) if d]
    assert granted(kustomized, ACCOUNT) == granted(_render(), ACCOUNT)


def test_opt_ins_add_only_their_template_kinds() -> None:
    base = granted(_render(), ACCOUNT)
    secrets_ = granted(_render("--set", "propagateSecrets=true"), ACCOUNT) - base
    assert secrets_ == {Grant("", "", "secrets", verb) for verb in TEMPLATE_VERBS}
    kinds = '[{"apiGroup": "example.com", "resources": ["widgets"], "status": true}]'
    extra = granted(_render("--set-json", f"extraTemplateKinds={kinds}"), ACCOUNT) - base
    widgets = {Grant("", "example.com", "widgets", verb) for verb in TEMPLATE_VERBS}
    assert extra == widgets | {Grant("", "example.com", "widgets/status", "update")}


WEBHOOK = ("--set", "webhook.enabled=true", "--set", "webhook.caBundle=QUJD")


def _hooks(documents: list[Obj]) -> dict[str, list[tuple[str, Any, str, str]]]:
    """Each webhook configuration's hooks: name, rules, path, failure policy."""
    return {
        d["kind"]: [
            (h["name"], h["rules"], h["clientConfig"]["service"]["path"], h["failurePolicy"])
            for h in d["webhooks"]
        ]
        for d in documents
        if d["kind"].endswith("WebhookConfiguration")
    }


def test_the_webhook_serves_deploys_hooks_with_its_declared_rbac() -> None:
    rendered = _render(*WEBHOOK)
    shipped = [
        d
        for d in yaml.safe_load_all(
            (ROOT / "deploy" / "webhook" / "webhook-configuration.yaml").read_text()
        )
        if d
    ]
    assert _hooks(rendered) == _hooks(shipped)
    for configuration in (d for d in rendered if d["kind"].endswith("WebhookConfiguration")):
        for hook in configuration["webhooks"]:
            assert hook["clientConfig"]["caBundle"] == "QUJD"
            assert hook["clientConfig"]["service"]["name"] == "reconcile-webhook"
    wanted = {grant for rule in WEBHOOK_PERMISSIONS.rules for grant in rule.grants()}
    assert granted(rendered, ("karmada-system", "reconcile-webhook")) == wanted
    assert granted(rendered, ACCOUNT) == granted(_render(), ACCOUNT)


def test_cert_manager_issues_the_webhook_certificate_and_injects_its_ca() -> None:
    rendered = _render("--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true")
    kinds = {d["kind"]: d for d in rendered}
    assert kinds["Certificate"]["spec"]["secretName"] == "reconcile-webhook-cert"
    assert kinds["Certificate"]["spec"]["dnsNames"][0] == "reconcile-webhook.karmada-system.svc"
    assert kinds["Issuer"]["spec"] == {"selfSigned": {}}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        annotations = kinds[kind]["metadata"]["annotations"]
        assert annotations["cert-manager.io/inject-ca-from"] == "karmada-system/reconcile-webhook"


@pytest.mark.parametrize(
    ("values", "words"),
    [
        (("--set", "replicas=-1"), "replicas"),
        (("--set", "shards=auto", "--set", "leaderElection.enabled=false"), "leaderElection"),
        (("--set", "replicas=1", "--set", "shards=some"), "shards"),
        (("--set", "logLevel=verbose"), "logLevel"),
        (("--set", "replicas=3", "--set", "leaderElection.enabled=false"), "leaderElection"),
        (("--set", "webhook.enabled=true"), "webhook.enabled needs webhook.caBundle"),
    ],
)
def test_invalid_values_fail_at_render_time_saying_why(values: tuple[str, ...], words: str) -> None:
    args = ("template", "reconcile", str(CHART), *values)
    message = _helm(*args, check=False)
    assert words in message, message


@pytest.mark.asyncio(loop_scope="session")
async def test_install_upgrade_and_uninstall_on_a_real_apiserver(host: ControlPlane) -> None:
    release = f"chart-{secrets.token_hex(3)}"
    namespace, clusters = release, f"{release}-clusters"
    kubeconfig = host.kubeconfig
    values = ("--set", f"clusterNamespace={clusters}")
    async with await admin_client(host) as client:
        _helm("install", release, str(CHART), "--namespace", namespace, "--create-namespace",
              *values, "--wait=false", kubeconfig=kubeconfig)  # fmt: skip
        manifest = _manifest(release, namespace, kubeconfig)
        assert manifest, "helm get manifest lists the release's objects"
        for obj in manifest:
            assert await _exists(client, obj), f"{obj['kind']} {obj['metadata']['name']} missing"
        _helm("upgrade", release, str(CHART), "--namespace", namespace, *values, *SHARDED,
              kubeconfig=kubeconfig)  # fmt: skip
        deployment = await client.get(
            DEPLOYMENT, f"{release}-controller-manager", namespace=namespace
        )
        assert deployment["spec"]["replicas"] == 3
        assert "--shards=auto" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        manifest = _manifest(release, namespace, kubeconfig)
        _helm("uninstall", release, "--namespace", namespace, kubeconfig=kubeconfig)
        for obj in manifest:
            assert not await _exists(client, obj), f"{obj['kind']} {obj['metadata']['name']} left"
        crds = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
        for path in crd_paths():
            name = yaml.safe_load(path.read_text())["metadata"]["name"]
            assert await client.get(crds, name), "Helm keeps CRDs on uninstall"


def _manifest(release: str, namespace: str, kubeconfig: Path) -> list[Obj]:
    text = _helm("get", "manifest", release, "--namespace", namespace, kubeconfig=kubeconfig)
    return [d for d in yaml.safe_load_all(text) if d]


async def _exists(client: Client, obj: Obj) -> bool:
    group, _, version = obj["apiVersion"].rpartition("/")
    gvk = GVK(group, version, obj["kind"])
    try:
        found = await client.get(
            gvk, obj["metadata"]["name"], namespace=obj["metadata"].get("namespace")
        )
    except NotFound:
        return False
    # A namespace being deleted is gone as far as uninstall is concerned.
    return not (found.get("metadata") or {}).get("deletionTimestamp")
