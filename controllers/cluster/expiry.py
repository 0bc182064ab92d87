"""Expiry tells when a member's token lapses, and whether its Cluster should say so already.

``reconcile join`` asks the member for a year-long token (TokenRequest ``expirationSeconds``), but
a member may cap the lifetime (kube-apiserver's ``--service-account-max-token-expiration``, down
to one hour) and nothing renews the token by itself: once it lapses the member answers 401 and
the Cluster turns Ready=False with no word of why. So the cluster-status controller sets the
condition ``TokenExpiring`` on the Cluster (abnormal-true, like a Node's MemoryPressure):

- True, reason ``TokenExpiresSoon``, once less than a tenth of the token's lifetime or less than
  ``EXPIRY_WARNING`` (7 days) is left, whichever window is longer; True, reason
  ``TokenExpired``, once it lapsed. Each turn to True is a Warning Event of that reason too.
- False, reason ``TokenValid``, before that, the message saying when it expires.
- absent when the expiry is unknown (a kubeconfig file, a token that is no JWT or has no ``exp``).

Karmada has no such condition (its Cluster conditions are Ready and CompleteAPIEnablements,
pkg/apis/cluster/v1alpha1/types.go), so the type is this project's own.

The expiry is read from the token itself, the ``exp`` claim of the JWT (and ``iat`` for its
lifetime), decoded without verifying the signature: it is the expiry of the very credential that
is sent, whoever wrote the Secret (reconcile join, karmadactl join, a hand-made token), which an
annotation beside it could contradict. Not verifying is safe here: the value only times a
warning, and whoever can write the token can already do worse than misstate its expiry. Tokens of
kube-apiserver's TokenRequest API are JWTs carrying both claims; a token that is not a JWT (an
opaque bearer token) has no known expiry.

Only ``reconcile join NAME --refresh`` renews a token: the controller-manager does not mint
successors itself, since that would need write access to Secrets of the cluster namespace and
would make a stolen member token renewable for ever through the controller.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

import orjson

__all__ = [
    "EXPIRY_WARNING",
    "EXPIRY_WARNING_FRACTION",
    "TOKEN_EXPIRED",
    "TOKEN_EXPIRES_SOON",
    "TOKEN_EXPIRING_CONDITION",
    "TOKEN_VALID",
    "ExpiryVerdict",
    "TokenLifetime",
    "expiry_verdict",
    "token_lifetime",
    "warning_window",
]

TOKEN_EXPIRING_CONDITION: Final = "TokenExpiring"
TOKEN_EXPIRES_SOON: Final = "TokenExpiresSoon"
TOKEN_EXPIRED: Final = "TokenExpired"
TOKEN_VALID: Final = "TokenValid"
EXPIRY_WARNING: Final = 7 * 24 * 3600.0
"""Seconds before expiry the condition turns True at the latest (7 days)."""
EXPIRY_WARNING_FRACTION: Final = 0.1
"""Share of the token's lifetime before expiry the condition turns True at the latest."""

_MAX_PAYLOAD: Final = 64 * 1024  # a JWT's claims are well under 1 KiB; never decode more


@dataclass(frozen=True)
class TokenLifetime:
    """When a token was issued (None: unknown) and when it expires, in Unix seconds."""

    issued: float | None
    expires: float


@dataclass(frozen=True)
class ExpiryVerdict:
    """What the TokenExpiring condition says."""

    status: str
    reason: str
    message: str


def token_lifetime(token: str) -> TokenLifetime | None:
    """The ``iat`` and ``exp`` claims of a JWT (signature not checked), None when the token is
    no JWT or names no expiry."""
    parts = token.split(".")
    if len(parts) != 3 or len(parts[1]) > _MAX_PAYLOAD:
        return None
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(claims, dict):
        return None
    expires = _time(claims.get("exp"))
    return None if expires is None else TokenLifetime(_time(claims.get("iat")), expires)


def _time(value: object) -> float | None:
    # bool is an int; a time far outside datetime's range could not be shown.
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 2**37:
        return float(value)
    return None


def expiry_verdict(lifetime: TokenLifetime, now: float) -> ExpiryVerdict:
    """The TokenExpiring condition for a token of ``lifetime`` at ``now`` (Unix seconds).

    The message names times, not what is left, so it changes only with the token (the status is
    written when it changes).
    """
    when = _iso(lifetime.expires)
    renew = "renew it with `reconcile join NAME --refresh`"
    if lifetime.expires <= now:
        return ExpiryVerdict(
            "True", TOKEN_EXPIRED, f"the member's token expired at {when}: {renew}"
        )
    issued = f"issued {_iso(lifetime.issued)}, " if lifetime.issued is not None else ""
    window = warning_window(lifetime)
    if lifetime.expires - now < window:
        message = (
            f"the member's token ({issued}expires {when}) is in its last {_duration(window)}; "
            f"the member becomes unreachable when it lapses: {renew}"
        )
        return ExpiryVerdict("True", TOKEN_EXPIRES_SOON, message)
    return ExpiryVerdict("False", TOKEN_VALID, f"the member's token ({issued}expires {when})")


def warning_window(lifetime: TokenLifetime) -> float:
    """Seconds before expiry the warning starts: 7 days or a tenth of the lifetime, the longer."""
    if lifetime.issued is None:
        return EXPIRY_WARNING
    share = (lifetime.expires - lifetime.issued) * EXPIRY_WARNING_FRACTION
    return max(EXPIRY_WARNING, share)


def _iso(seconds: float | None) -> str:
    if seconds is None:
        return "at an unknown time"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.0f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.0f} hours"
    return f"{max(1, round(seconds / 60))} minutes"
