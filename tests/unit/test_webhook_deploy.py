"""deploy/webhook serves exactly the kinds controllers.webhook admits, with least privilege; the
controller-manager's optional shard assignment webhook is sent its default template kinds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from controllers.controllermanager import DISABLED_BY_DEFAULT, _selected
from controllers.rbac import Grant, granted, problems
from controllers.sharding import RING
from controllers.webhook import ADMITTED, PERMISSIONS
from reconcile.sharding import ASSIGN_PATH_PREFIX, Ring
from reconcile.webhook import mutate_path, validate_path

DEPLOY = Path(__file__).parents[2] / "deploy" / "webhook"
ACCOUNT = ("karmada-system", "reconcile-webhook")


def _documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def _hooks(kind: str) -> dict[str, tuple[str, tuple[str, ...], str]]:
    (configuration,) = [d for d in _documents("webhook-configuration.yaml") if d["kind"] == kind]
    found = {}
    for hook in configuration["webhooks"]:
        (rule,) = hook["rules"]
        resource = f"{rule['resources'][0]}.{rule['apiGroups'][0]}/{rule['apiVersions'][0]}"
        path = hook["clientConfig"]["service"]["path"]
        found[resource] = (path, tuple(rule["operations"]), hook["failurePolicy"])
    return found


def _expected(mutating: bool) -> dict[str, tuple[str, tuple[str, ...], str]]:
    found = {}
    for kind in ADMITTED:
        operations = kind.mutating if mutating else kind.validating
        if operations:
            gvk = kind.resource.gvk
            path = mutate_path(gvk) if mutating else validate_path(gvk)
            found[f"{kind.resource.plural}.{gvk.group}/{gvk.version}"] = (
                path,
                tuple(operations),
                "Fail",
            )
    return found


def test_the_configurations_list_every_admitted_kind_at_its_path() -> None:
    assert _hooks("MutatingWebhookConfiguration") == _expected(mutating=True)
    assert _hooks("ValidatingWebhookConfiguration") == _expected(mutating=False)


def test_the_webhook_may_do_what_it_declares_and_no_more() -> None:
    wanted = {grant for rule in PERMISSIONS.rules for grant in rule.grants()}
    given = granted(_documents("rbac.yaml"), ACCOUNT)
    assert given == wanted
    assert problems(given) == []
    assert Grant("", "config.karmada.io", "resourceinterpretercustomizations", "list") in given


def test_the_webhook_controller_runs_only_when_named() -> None:
    assert {"webhook"} == DISABLED_BY_DEFAULT
    assert "webhook" not in _selected(["*"])
    assert _selected(["*", "webhook"])[-1] == "webhook"
    assert _selected(["webhook"]) == ["webhook"]


def test_the_shard_assignment_webhook_sends_the_default_templates_to_the_assigner() -> None:
    manager = DEPLOY.parent / "controller-manager"
    documents = yaml.safe_load_all(
        (manager / "optional" / "shard-assignment-webhook.yaml").read_text()
    )
    service, configuration = [d for d in documents if d]
    (hook,) = configuration["webhooks"]
    assert hook["clientConfig"]["service"]["path"] == ASSIGN_PATH_PREFIX + RING
    assert hook["clientConfig"]["service"]["name"] == service["metadata"]["name"]
    assert hook["failurePolicy"] == "Ignore", "a template's creation never waits for it"
    (expression,) = hook["objectSelector"]["matchExpressions"]
    assert expression == {"key": Ring(RING).shard_label, "operator": "DoesNotExist"}
    sent = {(g, r) for rule in hook["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert all(rule["operations"] == ["CREATE"] for rule in hook["rules"])
    roles = yaml.safe_load_all((manager / "rbac.yaml").read_text())
    (templates,) = [
        d
        for d in roles
        if d and d["metadata"]["name"] == "reconcile:controller-manager:default-templates"
    ]
    readable = {
        (g, r)
        for rule in templates["rules"]
        if "watch" in rule["verbs"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    assert sent == readable
    (deployment,) = yaml.safe_load_all((manager / "deployment.yaml").read_text())
    pods = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pods.items()
