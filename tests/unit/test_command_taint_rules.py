"""How ``reconcile taint`` and ``cordon`` change a taint list: karmadactl's rules, others kept."""

from __future__ import annotations

import pytest

from controllers.api import Taint
from controllers.commands import CommandError
from controllers.commands.cordon import _cordon, _uncordon
from controllers.commands.taint import MODIFIED, TAINTED, UNTAINTED, reorganize_taints
from controllers.commands.taintspec import parse_taints

NOW = "2024-05-01T12:00:00Z"
EARLIER = "2024-01-01T00:00:00Z"
FOO = Taint(key="foo", value="bar", effect="NoSchedule")
NOT_READY = Taint(key="cluster.karmada.io/not-ready", effect="NoSchedule")


def reorganize(
    existing: list[Taint], *specs: str, overwrite: bool = False
) -> tuple[list[Taint], str]:
    return reorganize_taints("m1", existing, parse_taints(specs), overwrite=overwrite, now=NOW)


@pytest.mark.parametrize(
    ("specs", "overwrite", "taints", "word"),
    [
        # karmadactl's TestReorganizeTaints cases, on a cluster with foo=bar:NoSchedule.
        pytest.param((), True, [FOO], MODIFIED, id="no changes with overwrite"),
        pytest.param((), False, [FOO], UNTAINTED, id="no changes without overwrite"),
        pytest.param(
            ("foo_1:NoSchedule",),
            False,
            [FOO, Taint(key="foo_1", effect="NoSchedule")],
            TAINTED,
            id="add new taint (appended, not first as karmadactl)",
        ),
        pytest.param(("foo:NoSchedule-",), False, [], UNTAINTED, id="delete taint with effect"),
        pytest.param(("foo-",), False, [], UNTAINTED, id="delete taint with no effect"),
        pytest.param(
            ("foo_1:NoSchedule", "foo:NoSchedule-"),
            False,
            [Taint(key="foo_1", effect="NoSchedule")],
            MODIFIED,
            id="add new taint and delete old one",
        ),
        pytest.param(
            ("foo=baz:NoSchedule",),
            True,
            [Taint(key="foo", value="baz", effect="NoSchedule")],
            MODIFIED,
            id="overwrite a value",
        ),
        pytest.param(
            ("foo=bar:NoExecute",),
            False,
            [FOO, Taint(key="foo", value="bar", effect="NoExecute", timeAdded=NOW)],
            TAINTED,
            id="same key, another effect is another taint; NoExecute gets timeAdded",
        ),
    ],
)
def test_karmadactls_cases(
    specs: tuple[str, ...], overwrite: bool, taints: list[Taint], word: str
) -> None:
    assert reorganize([FOO], *specs, overwrite=overwrite) == (taints, word)


def test_an_existing_taint_needs_overwrite() -> None:
    with pytest.raises(CommandError) as refused:
        reorganize([FOO], "foo=other:NoSchedule")
    assert str(refused.value) == (
        "cluster m1 already has foo taint(s) with same effect(s) and --overwrite is false"
    )


def test_removing_a_missing_taint_fails_and_names_it() -> None:
    with pytest.raises(CommandError) as refused:
        reorganize([FOO], "foo:NoExecute-", "gone-")
    assert str(refused.value) == 'taint "foo:NoExecute" not found; taint "gone" not found'


def test_other_taints_stay_in_place_and_unchanged() -> None:
    policy = Taint(key="policy", value="v", effect="NoExecute", timeAdded=EARLIER)
    existing = [NOT_READY, FOO, policy]
    taints, _ = reorganize(existing, "foo=baz:NoSchedule", "new:PreferNoSchedule", overwrite=True)
    assert taints == [
        NOT_READY,
        Taint(key="foo", value="baz", effect="NoSchedule"),
        policy,
        Taint(key="new", effect="PreferNoSchedule"),
    ]


def test_re_adding_an_unchanged_no_execute_taint_keeps_its_time_added() -> None:
    old = Taint(key="k", value="v", effect="NoExecute", timeAdded=EARLIER)
    assert reorganize([old], "k=v:NoExecute", overwrite=True)[0] == [old]
    changed = reorganize([old], "k=w:NoExecute", overwrite=True)[0]
    assert changed == [Taint(key="k", value="w", effect="NoExecute", timeAdded=NOW)]


def test_cordon_adds_the_unschedulable_taint_once_and_uncordon_removes_only_it() -> None:
    unschedulable = Taint(key="cluster.karmada.io/unschedulable", effect="NoSchedule")
    cordoned, changed = _cordon([NOT_READY])
    assert (cordoned, changed) == ([NOT_READY, unschedulable], True)
    assert _cordon(cordoned) == (cordoned, False)
    other_effect = Taint(key="cluster.karmada.io/unschedulable", effect="NoExecute")
    assert _uncordon([*cordoned, other_effect]) == ([NOT_READY, other_effect], True)
    assert _uncordon([NOT_READY]) == ([NOT_READY], False)
