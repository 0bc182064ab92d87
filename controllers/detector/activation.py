"""Activation decides when a policy change reaches a template already propagated, as Karmada does.

By default (no ``activationPreference``) a changed policy is applied to every template it claims
at once. With ``activationPreference: Lazy`` it is applied to such a template only when the
template itself next changes: the detector leaves a binding built from this very version of the
template under this very policy as it is (``keeps_binding``). A template the policy claims anew (a
new template, or one taken from another policy) always gets the policy's current content, and so
does a template whose binding is gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controllers.api import built_from, propagation_spec
from controllers.detector.matching import claim_of, claimed_by

__all__ = ["LAZY", "is_lazy", "keeps_binding"]

LAZY: Final = "Lazy"


def is_lazy(policy: Mapping[str, Any]) -> bool:
    """Whether ``policy`` activates lazily (Karmada's IsLazyActivationEnabled)."""
    return propagation_spec(policy).get("activationPreference") == LAZY


def keeps_binding(
    policy: Mapping[str, Any], template: Mapping[str, Any], binding: Mapping[str, Any] | None
) -> bool:
    """Whether the detector must leave ``binding`` as it is: ``policy`` is Lazy, the binding is
    already claimed by it and was built from the template's current version (``built_from``: a
    template relabelled by the sharder only is not a change)."""
    if binding is None or not is_lazy(policy):
        return False
    claim = claim_of(binding)
    if claim is None or not claimed_by(claim, policy):
        return False
    return built_from(binding, template)
