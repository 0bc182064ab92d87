"""The fake's lists, watches and deletes look only at the objects their equality terms allow.

Candidate counts come from ``Filter.matches``, the exact check every object a selection looks at
gets; the randomized test holds every answer (current, exact past versions, pages) to a model.
"""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest

from reconcile.gvk import GVK
from reconcile.objects import Obj
from testenv.fake import FakeClient
from testenv.fake.filter import Filter, parse_filter
from testenv.fake.registry import BUILTIN_KINDS

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
COUNT = 10_000
SPECIAL: dict[str, tuple[str, dict[str, str]]] = {
    "o00017": ("a", {"app": "x", "tier": "db"}),
    "o04242": ("b", {"app": "x", "tier": "web"}),
    "o09999": ("a", {"app": "x"}),
    "o00100": ("b", {"app": "y"}),
}


def _configmap(index: int) -> Obj:
    name = f"o{index:05d}"
    namespace, labels = SPECIAL.get(name, ("a" if index % 2 else "b", {}))
    meta = {"name": name, "namespace": namespace, "labels": {"n": str(index), **labels}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def _secret(index: int) -> Obj:
    kind = "kubernetes.io/tls" if index in (5, 500) else "Opaque"
    meta = {"name": f"s{index:04d}", "namespace": "a"}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": kind}


@pytest.fixture(scope="module")
def objects() -> list[Obj]:
    return [_configmap(i) for i in range(COUNT)] + [_secret(i) for i in range(1000)]


class Counter:
    """The names of the objects ``Filter.matches`` was asked about since the last ``clear``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.examined: list[str] = []
        matches = Filter.matches

        def counting(selection: Filter, obj: Any) -> bool:
            self.examined.append(obj["metadata"]["name"])
            return matches(selection, obj)

        monkeypatch.setattr(Filter, "matches", counting)

    def take(self) -> list[str]:
        taken, self.examined = sorted(self.examined), []
        return taken


def _names(listing: Obj) -> list[str]:
    return [item["metadata"]["name"] for item in listing["items"]]


async def test_lists_examine_only_their_candidates(
    objects: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeClient(objects=objects)
    counter = Counter(monkeypatch)

    async def names(gvk: GVK = CONFIGMAP, **options: Any) -> list[str]:
        listing = await fake.list(gvk, **options)
        assert listing["metadata"] == {"resourceVersion": str(COUNT + 1000 + 1)}
        return _names(listing)

    assert await names(label_selector="app=x") == ["o00017", "o09999", "o04242"]
    assert counter.take() == ["o00017", "o04242", "o09999"]
    assert await names(label_selector="app in (x,y),tier!=db") == ["o09999", "o00100", "o04242"]
    assert counter.take() == ["o00017", "o00100", "o04242", "o09999"]
    # The narrowest term's objects are the candidates: app=x's three, not namespace a's 5,000.
    assert await names(label_selector={"app": "x"}, namespace="a") == ["o00017", "o09999"]
    assert counter.take() == ["o00017", "o04242", "o09999"]
    assert await names(field_selector="metadata.name=o00042") == ["o00042"]
    assert counter.take() == ["o00042"]
    assert await names(field_selector="metadata.namespace=b,metadata.name==o04242") == ["o04242"]
    assert counter.take() == ["o04242"]
    assert await names(SECRET, field_selector="type=kubernetes.io/tls") == ["s0005", "s0500"]
    assert counter.take() == ["s0005", "s0500"]
    assert await names(label_selector="app=nothing") == []
    assert counter.take() == []
    # Nothing but an inequality: every object is looked at, as without indexes.
    assert len(await names(label_selector="tier!=db")) == COUNT - 1
    assert len(counter.take()) == COUNT
    assert await names(namespace="a", label_selector="tier") == ["o00017"]
    assert len(counter.take()) == COUNT // 2


async def test_pages_and_past_versions_examine_candidates_and_writes_since(
    objects: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeClient(objects=objects)
    counter = Counter(monkeypatch)
    first = await fake.list(CONFIGMAP, label_selector="app=x", limit=1)
    assert (_names(first), first["metadata"]["remainingItemCount"]) == (["o00017"], 2)
    then = first["metadata"]["resourceVersion"]
    # Written between pages: o09999 leaves the selection, o00001 joins, o04242 goes.
    await fake.patch(CONFIGMAP, "o09999", {"metadata": {"labels": {"app": "y"}}}, namespace="a")
    await fake.patch(CONFIGMAP, "o00001", {"metadata": {"labels": {"app": "x"}}}, namespace="a")
    await fake.delete(CONFIGMAP, "o04242", namespace="b")
    counter.take()
    rest = await fake.list(
        CONFIGMAP, label_selector="app=x", limit=5, continue_=first["metadata"]["continue"]
    )
    assert _names(rest) == ["o09999", "o04242"]  # the snapshot of the first page
    assert rest["metadata"] == {"resourceVersion": then}
    assert set(counter.take()) <= {"o00001", "o04242", "o09999"}
    past = await fake.list(
        CONFIGMAP, label_selector="app=x", resource_version=then, resource_version_match="Exact"
    )
    assert _names(past) == ["o00017", "o09999", "o04242"]
    # The keys written since are candidates too, as they were then: o00001 was not x.
    assert counter.take() == ["o00001", "o00017", "o04242", "o09999"]
    now = await fake.list(CONFIGMAP, label_selector="app=x")
    assert _names(now) == ["o00001", "o00017"]
    assert counter.take() == ["o00001", "o00017"]


async def test_watches_and_deletes_examine_only_their_candidates(
    objects: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeClient(objects=objects)
    counter = Counter(monkeypatch)
    async with fake.watch(CONFIGMAP, label_selector="app=x", timeout_seconds=5) as stream:
        with anyio.fail_after(5):
            initial = [await anext(stream) for _ in range(3)]
    assert [e["object"]["metadata"]["name"] for e in initial] == ["o00017", "o09999", "o04242"]
    assert counter.take() == ["o00017", "o04242", "o09999"]
    deleted = await fake.delete_all_of(CONFIGMAP, namespace="a", label_selector="app in (x,y)")
    assert _names(deleted) == ["o00017", "o09999"]
    assert counter.take() == ["o00017", "o00100", "o04242", "o09999"]


# The randomized model check: every answer equals the model's, whatever the indexes did.

NAMES = [f"s{i}" for i in range(12)]
SELECTIONS: list[dict[str, Any]] = [
    {},
    {"label_selector": "app=x"},
    {"label_selector": "app in (x,),tier!=db"},  # "x" or the empty value
    {"label_selector": "app in (x,y),tier in (db)"},
    {"label_selector": "app notin (x)"},
    {"label_selector": "tier,!app"},
    {"namespace": "a", "label_selector": "app=y"},
    {"namespace": "b"},
    {"field_selector": "metadata.name=s3"},
    {"field_selector": "metadata.namespace=a,type=tls"},
    {"field_selector": "type!=tls", "label_selector": "app=x"},
]


def _random_secret(rng: random.Random, name: str) -> Obj:
    labels = {
        key: rng.choice(["x", "y", "db", ""]) for key in ("app", "tier") if rng.random() < 0.6
    }
    meta = {"name": name, "namespace": rng.choice("ab"), "labels": labels}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta,
        "type": rng.choice(["tls", "o"]),
    }


async def _write(fake: FakeClient, rng: random.Random, model: dict[tuple[str, str], Obj]) -> None:
    """One random write to ``fake``, mirrored in ``model`` (objects as the fake answered)."""
    wanted = _random_secret(rng, rng.choice(NAMES))
    meta = wanted["metadata"]
    key = (meta["namespace"], meta["name"])
    if key not in model:
        model[key] = await fake.create(wanted)
    elif rng.random() < 0.25:
        await fake.delete(SECRET, meta["name"], namespace=meta["namespace"])
        del model[key]
    else:
        # The fake leaves type mutable (no validation): an index must follow any change.
        body = {"metadata": {"labels": None}, "type": wanted["type"]}
        await fake.patch(SECRET, meta["name"], body, namespace=meta["namespace"])
        patched = {**body, "metadata": {"labels": meta["labels"]}}
        model[key] = await fake.patch(SECRET, meta["name"], patched, namespace=meta["namespace"])


async def _expected(
    fake: FakeClient, state: dict[tuple[str, str], Obj], options: dict[str, Any]
) -> list[str]:
    kind = next(k for k in BUILTIN_KINDS if k.gvk == SECRET)
    selection = parse_filter(
        kind,
        options.get("namespace"),
        options.get("label_selector"),
        options.get("field_selector"),
    )
    return [
        state[key]["metadata"]["name"] for key in sorted(state) if selection.matches(state[key])
    ]


async def test_random_writes_and_reads_agree_with_a_model() -> None:
    rng = random.Random(1313)
    fake = FakeClient()
    model: dict[tuple[str, str], Obj] = {}
    versions: list[tuple[str, dict[tuple[str, str], Obj]]] = []
    for _ in range(400):
        await _write(fake, rng, model)
        version = (await fake.list(SECRET, limit=1))["metadata"]["resourceVersion"]
        versions.append((version, dict(model)))
        if rng.random() < 0.1:
            options = rng.choice(SELECTIONS)
            assert _names(await fake.list(SECRET, **options)) == await _expected(
                fake, model, options
            ), options
    for version, state in rng.sample(versions, 40):
        for options in SELECTIONS:
            exact: dict[str, Any] = {"resource_version": version, "resource_version_match": "Exact"}
            pages, token = [], None
            while True:
                page = await fake.list(SECRET, **options, **exact, limit=2, continue_=token)
                pages += _names(page)
                token = page["metadata"].get("continue")
                if not token:
                    break
            assert pages == await _expected(fake, state, options), (version, options)
