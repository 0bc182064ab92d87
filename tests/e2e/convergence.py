"""Convergence is what the e2e crash, failover and chaos tests check once the dust has settled.

A namespace of label-selected Deployment templates and one PropagationPolicy dividing them 2:1
over the two members has converged when: every template has one Scheduled ResourceBinding it
controls; every binding has one Applied Work per member carrying its binding id and no Work is
left whose binding is gone (an orphan); and every member holds each template's Deployment exactly
once, applied by that Work, with its share of the replicas. ``Clusters`` holds the clients;
``converge`` waits for that state with a deadline and reports what still differs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any

import anyio

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
from tests.builders import weighted
from tests.e2e.stack import (
    DEPLOYMENT,
    MEMBERS,
    POLICY,
    client_of,
    has_namespace,
    new_deployment,
    new_policy,
)

Obj = dict[str, Any]
SHARES = {"member1": 2, "member2": 1}
"""The 2:1 static weights of ``new_policy``, per replica unit (templates have 3 replicas)."""
REPLICAS = 3
Expected = Callable[[str, str], int]
"""The replicas a member should run of a template: (template, cluster) -> replicas."""


def shares(name: str, cluster: str) -> int:
    """The default expectation: a REPLICAS template split 2:1."""
    return SHARES[cluster]


def scaled(names: Iterable[str], factor: int = 2) -> Expected:
    """The default expectation, but the templates ``names`` scaled to ``factor`` x REPLICAS."""
    bigger = frozenset(names)

    def expected(name: str, cluster: str) -> int:
        return SHARES[cluster] * (factor if name in bigger else 1)

    return expected


def labelled_template(name: str, namespace: str, labels: dict[str, str]) -> Obj:
    """A REPLICAS Deployment template carrying ``labels`` (what the policy selects)."""
    template = new_deployment(name, namespace, REPLICAS)
    template["metadata"]["labels"].update(labels)
    return template


def label_policy(
    name: str, namespace: str, labels: dict[str, str], members: Sequence[str] = MEMBERS
) -> Obj:
    """A PropagationPolicy of every Deployment carrying ``labels``, 2:1 over both members (or
    all of it to the one member of ``members``)."""
    placement = {} if len(members) > 1 else weighted(members, (1,))
    policy = new_policy(name, namespace, "", **placement)
    policy["spec"]["resourceSelectors"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": labels}}
    ]
    return policy


async def bounded(jobs: Iterable[Callable[[], Awaitable[object]]], limit: int = 16) -> None:
    """Run ``jobs`` concurrently, at most ``limit`` at a time."""
    limiter = anyio.CapacityLimiter(limit)

    async def run(job: Callable[[], Awaitable[object]]) -> None:
        async with limiter:
            await job()

    async with anyio.create_task_group() as group:
        for job in jobs:
            group.start_soon(run, job)


async def delete(client: Client, gvk: GVK, name: str, namespace: str) -> None:
    """Delete, gone already being fine."""
    with suppress(NotFound):
        await client.delete(gvk, name, namespace=namespace)


class Clusters:
    """Clients of the host and the members, and what this test's namespace holds in each."""

    def __init__(self, host: Client, members: dict[str, Client], namespace: str) -> None:
        self.host, self.members, self.namespace = host, members, namespace

    async def member_deployments(self, cluster: str) -> list[Obj]:
        """The Deployments of this namespace on ``cluster``."""
        return await self.members[cluster].list_all(DEPLOYMENT, namespace=self.namespace)

    async def works(self) -> dict[str, list[Obj]]:
        """This namespace's Works, by member (Works of other tests are left out)."""
        found = {}
        for cluster in self.members:
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
        """This namespace's ResourceBindings."""
        return await self.host.list_all(RESOURCE_BINDING_GVK, namespace=self.namespace)

    async def counts(self) -> dict[str, int]:
        """How many member Deployments, Works and bindings this namespace has."""
        works = await self.works()
        return {
            **{f"{c} deployments": len(await self.member_deployments(c)) for c in self.members},
            **{f"{c} works": len(works[c]) for c in self.members},
            "bindings": len(await self.bindings()),
        }

    async def clean_up(self, templates: Iterable[str], policy: str, timeout: float) -> None:
        """Delete ``templates`` and then ``policy``, and wait for the bindings, Works and member
        objects to go: the shared control planes are left without them for later tests."""
        ns, host = self.namespace, self.host
        await bounded(partial(delete, host, DEPLOYMENT, name, ns) for name in templates)
        # Last: deleted first, the policy would have its claims released from every template.
        await delete(host, POLICY, policy, ns)

        async def gone() -> bool:
            return not any((await self.counts()).values())

        await eventually(gone, timeout=timeout, interval=1.0)

    async def purge(self, policy: str, timeout: float) -> None:
        """Remove what this namespace's templates made anywhere (templates, ``policy``,
        bindings, their Works, member Deployments) directly, finalizers and all, and wait for it
        to be gone: ``clean_up`` for a load too large to have the controllers delete it, which
        must be stopped first (they would re-create what they see missing)."""
        ns, host = self.namespace, self.host
        await host.delete_all_of(DEPLOYMENT, namespace=ns)
        await delete(host, POLICY, policy, ns)
        for member in self.members.values():
            await member.delete_all_of(DEPLOYMENT, namespace=ns)
        works = [w for found in (await self.works()).values() for w in found]
        bindings = await self.bindings()
        await bounded((partial(_release, host, obj, ns) for obj in [*works, *bindings]), limit=32)
        marked = f"{PURGE_LABEL}={ns}"
        await host.delete_all_of(RESOURCE_BINDING_GVK, namespace=ns, label_selector=marked)
        for cluster in self.members:
            where = execution_namespace(cluster)
            await host.delete_all_of(WORK_GVK, namespace=where, label_selector=marked)

        async def gone() -> bool:
            return not any((await self.counts()).values())

        await eventually(gone, timeout=timeout, interval=1.0)


PURGE_LABEL = "e2e.reconcile.io/purge"
"""Marks the objects ``Clusters.purge`` deletes by collection."""


async def _release(client: Client, obj: Obj, mark: str) -> None:
    """Drop ``obj``'s finalizers (their controllers are stopped) and label it ``mark``."""
    patch = {"metadata": {"finalizers": None, "labels": {PURGE_LABEL: mark}}}
    with suppress(NotFound):
        await client.patch(GVK.of(obj), name_of(obj), patch, namespace=obj["metadata"]["namespace"])


@asynccontextmanager
async def clusters_of(
    env: Environment, namespace: str, members: Sequence[str] = MEMBERS
) -> AsyncIterator[Clusters]:
    """Admin clients of the host and ``members`` (default both), ``namespace`` created on each
    (the convergence checks look at these members only)."""
    host = await client_of(env.host)
    clients = {name: await client_of(env.members[name]) for name in members}
    try:
        for name, member in clients.items():
            if not await has_namespace(member, namespace):
                await env.members[name].create_namespace(namespace)
        yield Clusters(host, clients, namespace)
    finally:
        for client in (host, *clients.values()):
            await client.close()


def differences(names: list[str], expected: set[str], what: str) -> list[str]:
    """What is missing from ``names`` and what is there unexpectedly."""
    problems = []
    if missing := sorted(expected - set(names)):
        problems.append(f"{what}: {len(missing)} missing, e.g. {missing[:5]}")
    if extra := sorted(set(names) - expected):
        problems.append(f"{what}: {len(extra)} unexpected, e.g. {extra[:5]}")
    return problems


def duplicates(keys: list[Any], what: str) -> list[str]:
    """Keys met more than once. Names are unique per namespace by the apiserver, so a duplicate
    is sought by what the controllers must keep unique themselves: one binding per template
    (its controller reference), one Work per binding and cluster (its binding annotation), one
    member object per Work (its Work annotations)."""
    counted = Counter(keys)
    if twice := sorted(str(key) for key, count in counted.items() if count > 1):
        return [f"{what}: present more than once: {twice[:5]}"]
    return []


def applied_by(member_object: Obj) -> tuple[str | None, str | None]:
    """The (namespace, name) of the Work a member object says it was applied by."""
    annotations = member_object["metadata"].get("annotations") or {}
    return annotations.get(WORK_NAMESPACE_ANNOTATION), annotations.get(WORK_NAME_ANNOTATION)


def template_work_name(template: str, namespace: str) -> str:
    """The name of the Work of the Deployment ``template`` (the same in every execution ns)."""
    return work_name(DEPLOYMENT.kind, template, namespace)


async def _member_problems(clusters: Clusters, expected: set[str], want: Expected) -> list[str]:
    problems = []
    for cluster in clusters.members:
        deployments = await clusters.member_deployments(cluster)
        names = [name_of(d) for d in deployments]
        problems += differences(names, expected, f"{cluster} Deployments")
        problems += duplicates(
            [applied_by(d) for d in deployments], f"{cluster} Deployments of one Work"
        )
        for deployment in deployments:
            name = name_of(deployment)
            if name not in expected:
                continue
            replicas, got = want(name, cluster), deployment["spec"].get("replicas")
            if got != replicas:
                problems.append(f"{cluster} Deployment {name}: {got} replicas, want {replicas}")
            work = applied_by(deployment)
            if work != (execution_namespace(cluster), template_work_name(name, clusters.namespace)):
                problems.append(f"{cluster} Deployment {name}: applied by Work {work}")
    return problems


def _binding_problems(bindings: list[Obj], templates: dict[str, Obj]) -> list[str]:
    expected = {binding_name(DEPLOYMENT.kind, name) for name in templates}
    problems = differences([name_of(b) for b in bindings], expected, "ResourceBindings")
    problems += duplicates(
        [ref["uid"] if (ref := controller_of(b)) else None for b in bindings],
        "ResourceBindings of one template",
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
        owner = controller_of(binding)
        owner_uid = owner["uid"] if owner else None
        if owner_uid != uid_of(template):
            problems.append(f"binding {name} is controlled by {owner_uid}, not its template")
    return problems


def _work_problems(works: dict[str, list[Obj]], bindings: list[Obj], namespace: str) -> list[str]:
    ids = {name_of(b): binding_id_of(b) for b in bindings if not is_being_deleted(b)}
    expected = {template_work_name(name[: -len("-deployment")], namespace) for name in ids}
    problems = []
    for cluster, found in works.items():
        problems += differences([name_of(w) for w in found], expected, f"{cluster} Works")
        bound = [
            (w["metadata"].get("annotations") or {}).get(RESOURCE_BINDING_NAME_ANNOTATION)
            for w in found
        ]
        problems += duplicates(bound, f"{cluster} Works of one binding")
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


async def problems(clusters: Clusters, names: set[str], want: Expected = shares) -> list[str]:
    """What still differs from the converged state of the templates ``names``."""
    templates = {
        name_of(t): t
        for t in await clusters.host.list_all(DEPLOYMENT, namespace=clusters.namespace)
    }
    found = differences(list(templates), names, "templates")
    bindings = await clusters.bindings()
    found += _binding_problems(bindings, templates)
    found += _work_problems(await clusters.works(), bindings, clusters.namespace)
    found += await _member_problems(clusters, names, want)
    return found


async def converge(
    clusters: Clusters,
    names: set[str],
    timeout: float,
    want: Expected = shares,
    *,
    interval: float = 0.5,
) -> float:
    """Wait until the templates ``names`` have converged, checking every ``interval`` seconds
    (each check lists every binding, Work and member Deployment: a large namespace on shared
    cores wants it longer); returns the seconds it took.

    Raises:
        AssertionError: not within ``timeout``; the message lists what still differs.
    """
    started = anyio.current_time()
    last: list[str] = []

    async def converged() -> bool:
        nonlocal last
        last = await problems(clusters, names, want)
        return not last

    try:
        await eventually(converged, timeout=timeout, interval=interval)
    except AssertionError:
        shown = "\n  ".join(last[:20])
        raise AssertionError(
            f"not converged within {timeout}s ({len(last)} problems):\n  {shown}"
        ) from None
    return anyio.current_time() - started
