"""Reading a member token's expiry from its JWT claims, and what TokenExpiring says (#26 item 7)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from controllers.cluster.expiry import (
    EXPIRY_WARNING,
    TOKEN_EXPIRED,
    TOKEN_EXPIRES_SOON,
    TOKEN_VALID,
    TokenLifetime,
    expiry_verdict,
    token_lifetime,
    warning_window,
)

DAY = 86400.0
NOW = 1_800_000_000.0


def jwt(claims: Any) -> str:
    """A token shaped as kube-apiserver's TokenRequest answers (the signature is not checked)."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    return ".".join((part(b'{"alg":"RS256"}'), part(orjson.dumps(claims)), part(b"signature")))


def test_the_expiry_and_issue_time_come_from_the_jwt_claims() -> None:
    token = jwt({"iss": "https://member", "iat": 1_700_000_000, "exp": 1_700_003_600})
    assert token_lifetime(token) == TokenLifetime(1_700_000_000.0, 1_700_003_600.0)
    assert token_lifetime(jwt({"exp": 1_700_003_600})) == TokenLifetime(None, 1_700_003_600.0)


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("an-opaque-bearer-token", id="not-a-jwt"),
        pytest.param(jwt({"iat": 1}), id="no-exp"),
        pytest.param(jwt({"exp": "tomorrow"}), id="exp-not-a-number"),
        pytest.param(jwt({"exp": True}), id="exp-a-bool"),
        pytest.param(jwt({"exp": -5}), id="exp-negative"),
        pytest.param(jwt({"exp": 1e30}), id="exp-beyond-any-date"),
        pytest.param(jwt([1, 2]), id="claims-not-an-object"),
        pytest.param("a.%%%.c", id="payload-not-base64"),
        pytest.param("a." + "QUFB" * 20_000 + ".c", id="payload-too-large"),
        pytest.param("a.bm90IGpzb24.c", id="payload-not-json"),
    ],
)
def test_a_token_without_a_readable_expiry_has_none(token: str) -> None:
    assert token_lifetime(token) is None


def test_a_year_long_token_is_valid_until_its_last_tenth() -> None:
    year = TokenLifetime(NOW - 300 * DAY, NOW + 65 * DAY)
    assert warning_window(year) == pytest.approx(36.5 * DAY)
    verdict = expiry_verdict(year, NOW)
    assert (verdict.status, verdict.reason) == ("False", TOKEN_VALID)
    assert "expires 2027-" in verdict.message
    late = expiry_verdict(year, NOW + 30 * DAY)
    assert (late.status, late.reason) == ("True", TOKEN_EXPIRES_SOON)
    assert "reconcile join NAME --refresh" in late.message


def test_a_token_a_member_capped_to_an_hour_warns_at_once() -> None:
    hour = TokenLifetime(NOW, NOW + 3600)
    assert warning_window(hour) == EXPIRY_WARNING, "a week: longer than a tenth of an hour"
    verdict = expiry_verdict(hour, NOW + 1)
    assert (verdict.status, verdict.reason) == ("True", TOKEN_EXPIRES_SOON)
    assert "issued 2027-01-15T08:00:00Z, expires 2027-01-15T09:00:00Z" in verdict.message


def test_a_lapsed_token_is_expired() -> None:
    verdict = expiry_verdict(TokenLifetime(None, NOW), NOW)
    assert (verdict.status, verdict.reason) == ("True", TOKEN_EXPIRED)
    assert verdict.message.startswith("the member's token expired at 2027-01-15T08:00:00Z")


def test_the_message_does_not_change_while_time_passes() -> None:
    """The status is written when it changes: a countdown would write it at every probe."""
    lifetime = TokenLifetime(NOW, NOW + 3600)
    assert expiry_verdict(lifetime, NOW + 10) == expiry_verdict(lifetime, NOW + 3000)
