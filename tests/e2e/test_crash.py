"""End to end: a controller-manager process killed (SIGKILL) mid-propagation, then restarted.

The controller-manager runs as its own process (the ``reconcile`` console script), reaching the
members through the Cluster objects and Secrets ``join`` created, as in production. It is killed
while 200 Deployments are on their way to two members; while it is down a few templates are
scaled and a few deleted (testenv runs no garbage collector: the detector deletes their
bindings). Restarted, it must converge: every member Deployment present once with its share of
the replicas, one Applied Work per binding and cluster, one Scheduled binding per template,
nothing orphaned.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from controllers.api import (
    RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    SCHEDULED_CONDITION,
    WORK_APPLIED_CONDITION,
    WORK_GVK,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
    execution_namespace,
)
from controllers.binding.names import binding_id_of, binding_name, work_name
from reconcile import (
    GVK,
    Client,
    NotFound,
    controller_of,
    is_being_deleted,
    is_condition_true,
    name_of,
    uid_of,
)
from testenv import Environment, eventually
from tests.e2e.stack import (
    DEPLOYMENT,
    MEMBERS,
    POLICY,
    client_of,
    has_namespace,
    new_deployment,
    new_policy,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

TEMPLATES = 200
REPLICAS = 3
SHARES = {"member1": 2, "member2": 1}
"""The 2:1 static weights of ``new_policy`` applied to REPLICAS."""
SCALED = {f"web-{i:03d}" for i in range(0, 200, 40)}
"""Templates scaled to twice REPLICAS while the controller-manager is down."""
DELETED = {f"web-{i:03d}" for i in range(7, 200, 40)}
"""Templates deleted while the controller-manager is down."""
SELECTED = {"e2e.reconcile.io/crash": "true"}
KILL_AFTER = 20
"""Member Deployments (member1) seen before the SIGKILL: propagation is under way."""
CONVERGE_TIMEOUT = 300.0
"""Seconds the restarted controller-manager has to converge (2 shared cores, generous)."""
EXIT_TIMEOUT = 60.0
"""Seconds a SIGTERMed controller-manager has to stop."""

Obj = dict[str, Any]


def _names() -> list[str]:
    return [f"web-{i:03d}" for i in range(TEMPLATES)]


def _template(name: str, namespace: str) -> Obj:
    template = new_deployment(name, namespace, REPLICAS)
    template["metadata"]["labels"].update(SELECTED)
    return template


def _policy(namespace: str) -> Obj:
    policy = new_policy("crash", namespace, "")
    policy["spec"]["resourceSelectors"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": SELECTED}}
    ]
    return policy


def _expected_replicas(name: str, cluster: str) -> int:
    return SHARES[cluster] * (2 if name in SCALED else 1)


def _tail(log: Path, lines: int = 80) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError as error:
        return f"<no log: {error}>"
    return "\n".join(text.splitlines()[-lines:])


@asynccontextmanager
async def controller_manager(env: Environment, log: Path) -> AsyncIterator[Process]:
    """``reconcile controller-manager`` against the host, its output appended to ``log``; killed
    and reaped on the way out if still running."""
    script = Path(sys.executable).with_name("reconcile")
    command = [
        str(script),
        "controller-manager",
        "--kubeconfig",
        str(env.host.kubeconfig),
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
    ]
    with log.open("ab") as out:
        out.write(f"--- {' '.join(command)}\n".encode())
        out.flush()
        process = await anyio.open_process(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.aclose()


async def _exit_status(process: Process, timeout: float) -> int:
    with anyio.fail_after(timeout):
        return await process.wait()


async def _bounded(jobs: Iterable[Callable[[], Awaitable[object]]], limit: int = 16) -> None:
    """Run ``jobs`` concurrently, at most ``limit`` at a time."""
    limiter = anyio.CapacityLimiter(limit)

    async def run(job: Callable[[], Awaitable[object]]) -> None:
        async with limiter:
            await job()

    async with anyio.create_task_group() as group:
        for job in jobs:
            group.start_soon(run, job)


async def _delete(client: Client, gvk: GVK, name: str, namespace: str) -> None:
    with suppress(NotFound):
        await client.delete(gvk, name, namespace=namespace)


class Clusters:
    """Clients of the host and the members, and what this test's namespace holds in each."""

    def __init__(self, host: Client, members: dict[str, Client], namespace: str) -> None:
        self.host, self.members, self.namespace = host, members, namespace

    async def member_deployments(self, cluster: str) -> list[Obj]:
        return await self.members[cluster].list_all(DEPLOYMENT, namespace=self.namespace)

    async def works(self) -> dict[str, list[Obj]]:
        """This namespace's Works, by member (Works of other tests are left out)."""
        found = {}
        for cluster in MEMBERS:
            works = await self.host.list_all(WORK_GVK, namespace=execution_namespace(cluster))
            found[cluster] = [
                work
                for work in works
                if (work["metadata"].get("annotations") or {}).get(
                    RESOURCE_BINDING_NAMESPACE_ANNOTATION
                )
                == self.namespace
            ]
        return found

    async def bindings(self) -> list[Obj]:
        return await self.host.list_all(RESOURCE_BINDING_GVK, namespace=self.namespace)

    async def counts(self) -> dict[str, int]:
        works = await self.works()
        return {
            **{f"{c} deployments": len(await self.member_deployments(c)) for c in MEMBERS},
            **{f"{c} works": len(works[c]) for c in MEMBERS},
            "bindings": len(await self.bindings()),
        }


def _differences(names: list[str], expected: set[str], what: str) -> list[str]:
    problems = []
    if missing := sorted(expected - set(names)):
        problems.append(f"{what}: {len(missing)} missing, e.g. {missing[:5]}")
    if extra := sorted(set(names) - expected):
        problems.append(f"{what}: {len(extra)} unexpected, e.g. {extra[:5]}")
    return problems


def _duplicates(keys: list[Any], what: str) -> list[str]:
    """Keys met more than once. Names are unique per namespace by the apiserver, so a duplicate
    is sought by what the controllers must keep unique themselves: one binding per template
    (its controller reference), one Work per binding and cluster (its binding annotation), one
    member object per Work (its Work annotations)."""
    counted = Counter(keys)
    if twice := sorted(str(key) for key, count in counted.items() if count > 1):
        return [f"{what}: present more than once: {twice[:5]}"]
    return []


async def _member_problems(clusters: Clusters, expected: set[str]) -> list[str]:
    problems = []
    for cluster in MEMBERS:
        deployments = await clusters.member_deployments(cluster)
        names = [name_of(d) for d in deployments]
        problems += _differences(names, expected, f"{cluster} Deployments")
        problems += _duplicates(
            [_applied_by(d) for d in deployments], f"{cluster} Deployments of one Work"
        )
        for deployment in deployments:
            name = name_of(deployment)
            if name not in expected:
                continue
            want, got = _expected_replicas(name, cluster), deployment["spec"].get("replicas")
            if got != want:
                problems.append(f"{cluster} Deployment {name}: {got} replicas, want {want}")
            work = _applied_by(deployment)
            want_work = (execution_namespace(cluster), _work_name(name, clusters.namespace))
            if work != want_work:
                problems.append(f"{cluster} Deployment {name}: applied by Work {work}")
    return problems


def _applied_by(member_object: Obj) -> tuple[str | None, str | None]:
    annotations = member_object["metadata"].get("annotations") or {}
    return annotations.get(WORK_NAMESPACE_ANNOTATION), annotations.get(WORK_NAME_ANNOTATION)


def _work_name(template: str, namespace: str) -> str:
    return work_name(DEPLOYMENT.kind, template, namespace)


def _binding_problems(bindings: list[Obj], templates: dict[str, Obj]) -> list[str]:
    expected = {binding_name(DEPLOYMENT.kind, name) for name in templates}
    problems = _differences([name_of(b) for b in bindings], expected, "ResourceBindings")
    problems += _duplicates(
        [(controller_of(b) or {}).get("uid") for b in bindings], "ResourceBindings of one template"
    )
    by_binding = {binding_name(DEPLOYMENT.kind, n): t for n, t in templates.items()}
    for binding in bindings:
        name = name_of(binding)
        template = by_binding.get(name)
        if template is None:
            continue
        if is_being_deleted(binding):
            problems.append(f"binding {name} is being deleted")
        if not is_condition_true(binding, SCHEDULED_CONDITION):
            problems.append(f"binding {name} is not Scheduled")
        owner = controller_of(binding) or {}
        if owner.get("uid") != uid_of(template):
            problems.append(f"binding {name} is controlled by {owner.get('uid')}, not its template")
    return problems


def _work_problems(works: dict[str, list[Obj]], bindings: list[Obj], namespace: str) -> list[str]:
    ids = {name_of(b): binding_id_of(b) for b in bindings if not is_being_deleted(b)}
    expected = {_work_name(name[: -len("-deployment")], namespace) for name in ids}
    problems = []
    for cluster, found in works.items():
        names = [name_of(w) for w in found]
        problems += _differences(names, expected, f"{cluster} Works")
        bound = [
            (w["metadata"].get("annotations") or {}).get(RESOURCE_BINDING_NAME_ANNOTATION)
            for w in found
        ]
        problems += _duplicates(bound, f"{cluster} Works of one binding")
        for work in found:
            problems += _one_work_problems(work, ids)
    return problems


def _one_work_problems(work: Obj, ids: dict[str, str | None]) -> list[str]:
    where = f"Work {work['metadata']['namespace']}/{name_of(work)}"
    binding = (work["metadata"].get("annotations") or {}).get(RESOURCE_BINDING_NAME_ANNOTATION)
    if binding not in ids:
        return [f"{where} is an orphan: its binding {binding} is gone"]
    problems = []
    if binding_id_of(work) != ids[binding] or ids[binding] is None:
        problems.append(f"{where} carries binding id {binding_id_of(work)}, not {ids[binding]}")
    if is_being_deleted(work):
        problems.append(f"{where} is being deleted")
    if not is_condition_true(work, WORK_APPLIED_CONDITION):
        problems.append(f"{where} is not Applied")
    return problems


async def _problems(clusters: Clusters, names: set[str]) -> list[str]:
    """What still differs from the converged state of the templates ``names``."""
    templates = {
        name_of(t): t
        for t in await clusters.host.list_all(DEPLOYMENT, namespace=clusters.namespace)
    }
    problems = _differences(list(templates), names, "templates")
    bindings = await clusters.bindings()
    problems += _binding_problems(bindings, templates)
    problems += _work_problems(await clusters.works(), bindings, clusters.namespace)
    problems += await _member_problems(clusters, names)
    return problems


async def _converge(clusters: Clusters, names: set[str], timeout: float) -> None:
    last: list[str] = []

    async def converged() -> bool:
        nonlocal last
        last = await _problems(clusters, names)
        return not last

    try:
        await eventually(converged, timeout=timeout, interval=1.0)
    except AssertionError:
        shown = "\n  ".join(last[:20])
        raise AssertionError(
            f"not converged within {timeout}s ({len(last)} problems):\n  {shown}"
        ) from None


@asynccontextmanager
async def _clusters(env: Environment, namespace: str) -> AsyncIterator[Clusters]:
    host = await client_of(env.host)
    members = {name: await client_of(env.members[name]) for name in MEMBERS}
    try:
        for name, member in members.items():
            if not await has_namespace(member, namespace):
                await env.members[name].create_namespace(namespace)
        yield Clusters(host, members, namespace)
    finally:
        for client in (host, *members.values()):
            await client.close()


async def test_sigkill_mid_propagation_converges_after_restart(
    joined: Environment, namespace: str, tmp_path: Path
) -> None:
    log = tmp_path / "controller-manager.log"
    try:
        async with _clusters(joined, namespace) as clusters:
            await _crash_and_converge(joined, clusters, log)
    except BaseException:
        print(f"controller-manager log ({log}), last lines:\n{_tail(log)}")
        raise


async def _crash_and_converge(env: Environment, clusters: Clusters, log: Path) -> None:
    ns, host = clusters.namespace, clusters.host
    await host.create(_policy(ns))
    await _bounded(partial(host.create, _template(name, ns)) for name in _names())

    async with controller_manager(env, log) as first:
        await _wait_for_propagation_under_way(clusters, first)
        first.send_signal(signal.SIGKILL)
        assert await _exit_status(first, EXIT_TIMEOUT) == -signal.SIGKILL
    at_kill = await clusters.counts()
    print(f"at the SIGKILL: {at_kill}")
    assert at_kill["member1 deployments"] < TEMPLATES, (
        f"propagation had finished before the kill, nothing was interrupted: {at_kill}"
    )

    await _change_while_down(clusters)
    kept = set(_names()) - DELETED
    async with controller_manager(env, log) as second:
        started = anyio.current_time()
        await _converge(clusters, kept, CONVERGE_TIMEOUT)
        print(f"converged {anyio.current_time() - started:.1f}s after the restart")
        await _clean_up(clusters)
        second.send_signal(signal.SIGTERM)
        assert await _exit_status(second, EXIT_TIMEOUT) == 0


async def _wait_for_propagation_under_way(clusters: Clusters, process: Process) -> None:
    async def under_way() -> bool:
        assert process.returncode is None, f"controller-manager exited: {process.returncode}"
        return len(await clusters.member_deployments("member1")) >= KILL_AFTER

    await eventually(under_way, timeout=CONVERGE_TIMEOUT, interval=0.05)


async def _change_while_down(clusters: Clusters) -> None:
    """Scale some templates and delete others (the restarted detector must find their bindings
    orphaned: it never sees these templates' deletion)."""
    ns, host = clusters.namespace, clusters.host
    for name in sorted(SCALED):
        await host.patch(DEPLOYMENT, name, {"spec": {"replicas": 2 * REPLICAS}}, namespace=ns)
    for name in sorted(DELETED):
        await _delete(host, DEPLOYMENT, name, ns)


async def _clean_up(clusters: Clusters) -> None:
    """Delete the templates and the policy, and wait for the bindings, Works and member objects
    to go: the shared control plane is left without 200 objects for later tests to reconcile."""
    ns, host = clusters.namespace, clusters.host
    names = sorted(set(_names()) - DELETED)
    await _bounded(partial(_delete, host, DEPLOYMENT, name, ns) for name in names)
    # Last: deleted first, the policy would have its claims released from every template.
    await _delete(host, POLICY, "crash", ns)

    async def gone() -> bool:
        counts = await clusters.counts()
        return not any(counts.values())

    await eventually(gone, timeout=CONVERGE_TIMEOUT, interval=1.0)
