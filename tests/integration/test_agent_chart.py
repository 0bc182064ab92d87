"""charts/reconcile-agent, with helm built from the Go module proxy (testenv's store), for real.

``helm lint`` passes; ``helm template`` renders as tests/data/chart-agent says (``UPDATE_GOLDEN=1``
rewrites it); the Deployment's arguments are ``reconcile agent``'s as its parser reads them; the
rendered RBAC is the agent's own needs in its member (the Lease narrowed to its name) plus the
replaceable role for what Works carry, and grants what deploy/agent grants; values the schema or
the templates refuse fail at render time with the reason; the apiserver accepts every object
rendered (a server-side dry run).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.cli import _parser
from controllers.rbac import Grant, granted, problems
from testenv import ControlPlane, find_binaries
from testenv.binaries import find_helm
from tests.agent_rbac import AGGREGATE_TO_AGENT, agent_member_grants

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "reconcile-agent"
GOLDEN = ROOT / "tests" / "data" / "chart-agent"
NAMESPACE = "karmada-system"
ACCOUNT = (NAMESPACE, "reconcile-agent")
MEMBER = ("--set", "clusterName=member3")
Obj = dict[str, Any]


def _helm(*args: str, check: bool = True) -> str:
    env = {**os.environ, "HELM_CACHE_HOME": "/tmp/helm-cache", "HELM_CONFIG_HOME": "/tmp/helm"}
    done = subprocess.run(
        [str(find_helm()), *args], capture_output=True, text=True, env=env, check=False
    )
    if check:
        assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"
    return done.stdout if check else done.stderr


def _template(*values: str) -> str:
    # Release "reconcile": its agent is reconcile-agent, deploy/agent's name.
    return _helm("template", "reconcile", str(CHART), "--namespace", NAMESPACE, *values)


def _render(*values: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all(_template(*values)) if d]


def _args(rendered: list[Obj]) -> list[str]:
    (deployment,) = [d for d in rendered if d["kind"] == "Deployment"]
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def test_helm_lint_passes() -> None:
    _helm("lint", "--strict", str(CHART), *MEMBER)


def test_the_render_is_the_golden_one() -> None:
    text = _template(*MEMBER)
    golden = GOLDEN / "default.yaml"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text(), "rendered default differs; UPDATE_GOLDEN=1 to accept"


def test_the_arguments_are_reconcile_agents() -> None:
    values = (*MEMBER, "--set", "clusterRegion=eu-west", "--set", "karmadaKubeconfig.context=h")
    rendered = _render(*values)
    args = _parser().parse_args(_args(rendered))
    assert args.command == "agent"
    assert (args.cluster_name, args.cluster_region, args.karmada_context) == (
        "member3",
        "eu-west",
        "h",
    )
    assert args.karmada_kubeconfig == "/etc/karmada/config/karmada.config"
    assert args.leader_elect
    assert args.leader_elect_resource_namespace == NAMESPACE
    assert args.kubeconfig is None, "the member is reached in-cluster"
    assert args.cluster_provider is None
    alone = ("--set", "replicas=1", "--set", "leaderElection.enabled=false")
    single = _parser().parse_args(_args(_render(*MEMBER, *alone)))
    assert not single.leader_elect


def test_the_rbac_is_the_agents_needs_plus_the_works_role() -> None:
    rendered = _render(*MEMBER)
    broad = [d for d in rendered if AGGREGATE_TO_AGENT in d["metadata"].get("labels", {})]
    narrow = granted([d for d in rendered if d not in broad], ACCOUNT)
    assert narrow == agent_member_grants(NAMESPACE, "member3")
    assert problems(narrow) == []
    assert Grant("", "*", "*", "*") in granted(rendered, ACCOUNT)
    without = _render(*MEMBER, "--set", "rbac.applyAnything=false")
    assert granted(without, ACCOUNT) == narrow, "without it, only the agent's own needs"


def test_it_grants_what_deploy_agent_grants_with_the_lease_named() -> None:
    kustomized = subprocess.run(
        [str(find_binaries().kubectl), "kustomize", str(ROOT / "deploy" / "agent")],
        capture_output=True,
        text=True,
        check=True,
    )
    deployed = granted([d for d in yaml.safe_load_all(kustomized.stdout) if d], ACCOUNT)
    charted = granted(_render(*MEMBER), ACCOUNT)
    assert {g._replace(name="") if g.resource == "leases" else g for g in charted} == deployed


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ((), "clusterName"),
        (("--set", "clusterName=Member_3"), "clusterName"),
        ((*MEMBER, "--set", "karmadaKubeconfig.secretName="), "secretName"),
        ((*MEMBER, "--set", "leaderElection.enabled=false"), "leaderElection"),
        ((*MEMBER, "--set", "logLevel=verbose"), "logLevel"),
    ],
)
def test_invalid_values_fail_at_render_time_saying_why(values: tuple[str, ...], words: str) -> None:
    message = _helm("template", "reconcile", str(CHART), *values, check=False)
    assert words in message, message


@pytest.mark.asyncio(loop_scope="session")
async def test_the_apiserver_accepts_every_object_rendered(host: ControlPlane) -> None:
    await host.kubectl("create", "namespace", NAMESPACE, check=False)
    rendered = _template(*MEMBER).encode()
    done = await host.kubectl(
        "apply", "--dry-run=server", "--server-side", "--force-conflicts", "-f", "-",
        input=rendered, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert done.stdout.count(b"(server dry run)") == len(_render(*MEMBER))
