"""A compressed store answers as an uncompressed one and keeps a fraction of the bytes."""

from __future__ import annotations

import random
import uuid

from reconcile.cache.store import MIN_DICTIONARY, Indexer, encode
from reconcile.objects import Obj


def _work(index: int, member: str) -> Obj:
    """A Work like the binding controller's: a manifest of a defaulted Deployment, a status."""
    name = f"web-{index:05d}"
    container = {
        "name": "nginx",
        "image": "nginx:1.25",
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "resources": {},
    }
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "labels": {"app": name, "karmada.io/managed": "true"},
            "annotations": {"resourcetemplate.karmada.io/uid": str(uuid.uuid4())},
        },
        "spec": {
            "replicas": index % 7,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [container],
                    "dnsPolicy": "ClusterFirst",
                    "restartPolicy": "Always",
                    "schedulerName": "default-scheduler",
                    "terminationGracePeriodSeconds": 30,
                },
            },
        },
    }
    return {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {
            "name": f"{name}-{index * 7919 % 100000:05d}",
            "namespace": f"karmada-es-{member}",
            "uid": str(uuid.uuid4()),
            "resourceVersion": str(1000 + index),
            "labels": {"app": name},
        },
        "spec": {"workload": {"manifests": [manifest]}},
        "status": {"conditions": [{"type": "Applied", "status": "True", "reason": "Applied"}]},
    }


def _by_app(obj: Obj) -> list[str]:
    return [obj["metadata"]["labels"]["app"]] if "app" in obj["metadata"].get("labels", {}) else []


def test_a_compressed_store_answers_every_read_as_a_plain_one_under_random_churn() -> None:
    rng = random.Random(29)
    plain, compressed = Indexer({"app": _by_app}), Indexer({"app": _by_app}, compress=True)
    for step in range(3000):
        index = rng.randrange(400)
        obj = _work(index, rng.choice(["member1", "member2"]))
        if step % 5 == 0:  # also the small objects that come before a dictionary
            obj = {"metadata": {"name": obj["metadata"]["name"], "namespace": "x"}}
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        if rng.random() < 0.15:
            assert plain.delete(key) == compressed.delete(key)
        elif rng.random() < 0.5:
            assert plain.upsert(obj) == compressed.upsert(obj)
        else:
            assert plain.upsert_encoded(key, encode(obj)) == compressed.upsert_encoded(
                key, encode(obj)
            )
    keys = plain.keys()
    assert sorted(keys) == sorted(compressed.keys())
    for key in keys:
        assert plain.get(key) == compressed.get(key)
    for app in ("web-00001", "web-00399"):
        assert plain.by_index("app", app) == compressed.by_index("app", app)
    compressed.add_indexers({"member": lambda o: [o["metadata"]["namespace"]]})
    assert [o["metadata"]["name"] for o in compressed.by_index("member", "x")] == [
        o["metadata"]["name"] for o in plain.by_index("namespace", "x")
    ]


def test_objects_of_one_kind_are_kept_in_a_small_part_of_their_json() -> None:
    plain, compressed = Indexer(), Indexer(compress=True)
    for index in range(500):
        for member in ("member1", "member2"):
            plain.upsert(_work(index, member))
            compressed.upsert(_work(index, member))
    # Each Work differs from the dictionary (the first Work) in its names, uids and numbers.
    ratio = plain.encoded_size() / compressed.encoded_size()
    assert ratio > 4, ratio


def test_a_store_keeps_small_objects_as_json_until_one_can_be_the_dictionary() -> None:
    store = Indexer(compress=True)
    small = {"metadata": {"name": "a", "namespace": "n"}}
    store.upsert(small)
    assert store.encoded_size() == len(encode(small))  # nothing to deflate against yet
    work = _work(1, "member1")
    assert len(encode(work)) >= MIN_DICTIONARY
    store.upsert(work)
    store.upsert(_work(2, "member1"))
    assert store.get("n/a") == small
    assert store.get("karmada-es-member1/" + work["metadata"]["name"]) == work
    assert store.encoded_size() < len(encode(small)) + 2 * len(encode(work))
