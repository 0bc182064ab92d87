"""The taint arguments of ``reconcile taint``, parsed and refused as kubectl/karmadactl do."""

from __future__ import annotations

import pytest

from controllers.api import Taint
from controllers.commands import CommandError
from controllers.commands.taintspec import (
    TaintChange,
    label_value_errors,
    parse_taint_args,
    parse_taints,
    qualified_name_errors,
    taint_string,
)

# apimachinery's texts, as kubectl and karmadactl print them.
NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
PREFIX_PART = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("specs", "add", "remove"),
    [
        pytest.param(
            ["dedicated=special-user:NoSchedule"],
            [Taint(key="dedicated", value="special-user", effect="NoSchedule")],
            [],
            id="key=value:effect adds",
        ),
        pytest.param(["bar:NoExecute"], [Taint(key="bar", effect="NoExecute")], [], id="no value"),
        pytest.param(
            ["example.com/my-app=x:PreferNoSchedule"],
            [Taint(key="example.com/my-app", value="x", effect="PreferNoSchedule")],
            [],
            id="a DNS subdomain prefix",
        ),
        pytest.param(
            ["dedicated:NoSchedule-"],
            [],
            [Taint(key="dedicated", effect="NoSchedule")],
            id="key:effect- removes that taint",
        ),
        pytest.param(["dedicated-"], [], [Taint(key="dedicated")], id="key- removes the key"),
        pytest.param(
            ["dedicated=ignored:NoSchedule-"],
            [],
            [Taint(key="dedicated", effect="NoSchedule")],
            id="a removal's value is ignored",
        ),
        pytest.param(
            ["a=1:NoSchedule", "a=1:NoExecute", "b-"],
            [
                Taint(key="a", value="1", effect="NoSchedule"),
                Taint(key="a", value="1", effect="NoExecute"),
            ],
            [Taint(key="b")],
            id="one key with two effects is two taints",
        ),
        pytest.param(
            ["a=1:NoSchedule", "a:NoExecute-"],
            [Taint(key="a", value="1", effect="NoSchedule")],
            [Taint(key="a", effect="NoExecute")],
            id="adding and removing one key under different effects",
        ),
    ],
)
def test_valid_specs_parse_into_additions_and_removals(
    specs: list[str], add: list[Taint], remove: list[Taint]
) -> None:
    assert parse_taints(specs) == TaintChange(tuple(add), tuple(remove))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            "dedicated", "invalid taint spec: dedicated", id="an addition needs an effect"
        ),
        pytest.param(
            # kubectl reads "dedicated=x" as a key (no colon), which no qualified name is.
            "dedicated=x",
            f"invalid taint spec: dedicated=x, {NAME_PART}",
            id="a value without an effect",
        ),
        pytest.param(
            "dedicated:Sometimes",
            "invalid taint effect: Sometimes, unsupported taint effect",
            id="an unknown effect",
        ),
        pytest.param(
            "dedicated:noschedule",
            "invalid taint effect: noschedule, unsupported taint effect",
            id="effects are case sensitive",
        ),
        pytest.param("a:b:NoSchedule", "invalid taint spec: a:b:NoSchedule", id="two colons"),
        pytest.param(
            "a=b=c:NoSchedule", "invalid taint spec: a=b=c:NoSchedule", id="two equals signs"
        ),
        pytest.param(
            "-a:NoSchedule", f"invalid taint spec: -a:NoSchedule, {NAME_PART}", id="a bad key"
        ),
        pytest.param(
            ":NoSchedule",
            f"invalid taint spec: :NoSchedule, name part must be non-empty; {NAME_PART}",
            id="an empty key",
        ),
        pytest.param(
            "Example.com/a:NoSchedule",
            f"invalid taint spec: Example.com/a:NoSchedule, {PREFIX_PART}",
            id="an upper-case prefix",
        ),
        pytest.param(
            "/a:NoSchedule",
            "invalid taint spec: /a:NoSchedule, prefix part must be non-empty",
            id="an empty prefix",
        ),
        pytest.param(
            f"{'k' * 64}:NoSchedule",
            f"invalid taint spec: {'k' * 64}:NoSchedule, name part must be no more than 63 "
            "characters",
            id="a key name of 64 characters",
        ),
        pytest.param(
            "a=b c:NoSchedule",
            f"invalid taint spec: a=b c:NoSchedule, {LABEL_VALUE}",
            id="a bad value",
        ),
        pytest.param(
            f"a={'v' * 64}:NoSchedule",
            f"invalid taint spec: a={'v' * 64}:NoSchedule, must be no more than 63 characters",
            id="a value of 64 characters",
        ),
        pytest.param(
            "bad key-", f"invalid taint spec: bad key, {NAME_PART}", id="a bad key to remove"
        ),
    ],
)
def test_malformed_specs_are_refused_in_kubectls_words(spec: str, message: str) -> None:
    with pytest.raises(CommandError) as refused:
        parse_taints([spec])
    assert str(refused.value) == message


def test_two_additions_of_one_key_and_effect_are_refused() -> None:
    with pytest.raises(CommandError, match="duplicated taints with the same key and effect"):
        parse_taints(["a=1:NoSchedule", "a=2:NoSchedule"])


@pytest.mark.parametrize(
    ("specs", "conflict"),
    [
        pytest.param(["a=1:NoSchedule", "a:NoSchedule-"], '{"a":"NoSchedule"}', id="same effect"),
        pytest.param(["a=1:NoSchedule", "a-"], '{"a":""}', id="the whole key"),
    ],
)
def test_adding_and_removing_one_taint_at_once_is_refused(specs: list[str], conflict: str) -> None:
    with pytest.raises(CommandError) as refused:
        parse_taints(specs)
    assert str(refused.value) == (
        f"can not both modify and remove the following taint(s) in the same command: {conflict}"
    )


def test_names_come_before_taints_and_a_karmadactl_resource_word_is_dropped() -> None:
    names, change = parse_taint_args(["clusters", "m1", "m2", "a:NoSchedule", "b-"])
    assert names == ["m1", "m2"]
    assert change.add == (Taint(key="a", effect="NoSchedule"),)
    assert change.remove == (Taint(key="b"),)
    # A Cluster may be called "cluster": alone, the word is its name.
    assert parse_taint_args(["cluster", "a:NoSchedule"])[0] == ["cluster"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["m1", "a:NoSchedule", "m2"],
            "all resources must be specified before taint changes: m2",
            id="a name after a taint",
        ),
        pytest.param(["m1"], "at least one taint update is required", id="no taint"),
        pytest.param(
            ["a:NoSchedule"], "at least one cluster name must be specified", id="no cluster"
        ),
    ],
)
def test_misordered_or_missing_arguments_are_refused(args: list[str], message: str) -> None:
    with pytest.raises(CommandError) as refused:
        parse_taint_args(args)
    assert str(refused.value) == message


def test_validators_accept_what_apimachinery_accepts() -> None:
    assert qualified_name_errors("cluster.karmada.io/not-ready") == []
    assert qualified_name_errors("A_b.c-1") == []
    assert label_value_errors("") == []
    assert label_value_errors("special-user") == []
    assert qualified_name_errors("a/b/c") != []


@pytest.mark.parametrize(
    ("taint", "text"),
    [
        (Taint(key="k", value="v", effect="NoSchedule"), "k=v:NoSchedule"),
        (Taint(key="k", effect="NoExecute"), "k:NoExecute"),
        (Taint(key="k"), "k"),
    ],
)
def test_taints_print_as_core_v1_taint_to_string(taint: Taint, text: str) -> None:
    assert taint_string(taint) == text
