"""PermittedKinds: what the detector's access reviews found, as other controllers read it."""

from __future__ import annotations

from controllers.detector import TEMPLATE_VERBS
from controllers.permittedkinds import READ_VERBS, Denial, PermittedKinds
from reconcile import GVK

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
SECRETS_DENIED = {SECRET: Denial("", "secrets", "get")}


def test_read_verbs_are_reviewed_first() -> None:
    # AccessReview names the first verb refused: a denial of patch means every read verb passed,
    # which is why PermittedKinds.denial ignores it for readers.
    assert TEMPLATE_VERBS[: len(READ_VERBS)] == READ_VERBS
    kinds = PermittedKinds()
    kinds.publish(set(), {SECRET: Denial("", "secrets", "patch")})
    assert kinds.denial(SECRET) is None
    assert kinds.denial(SECRET, ("patch",)) == Denial("", "secrets", "patch")
    assert Denial("example.io", "widgets", "list").permission() == "list widgets.example.io"


def test_subscribers_hear_of_kinds_permitted_after_the_first_round() -> None:
    heard: list[frozenset[GVK]] = []
    kinds = PermittedKinds()

    def failing(added: frozenset[GVK]) -> None:
        raise RuntimeError("a subscriber's bug")

    kinds.subscribe(failing)
    kinds.subscribe(heard.append)
    assert not kinds.pending()
    kinds.expect()
    assert kinds.pending()
    kinds.publish({CONFIGMAP}, SECRETS_DENIED)
    assert not kinds.pending()
    assert heard == [], "nothing was held back for a permission before the first answer"
    kinds.publish({CONFIGMAP}, SECRETS_DENIED)
    kinds.publish({CONFIGMAP, SECRET}, {})
    assert heard == [frozenset({SECRET})]
    assert kinds.denial(SECRET) is None
