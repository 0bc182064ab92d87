"""Images parses container image references and changes their registry, repository or tag.

A reference is ``[registry/]repository[:tag][@digest]`` in the grammar of
distribution/reference (no normalisation: ``nginx`` stays ``nginx``). As in Karmada's imageparser,
the first path segment is the registry only when it looks like a host (holds "." or ":", or is
``localhost``), so ``library/nginx`` has no registry and ``registry:5000/app`` has a registry with
a port. The imageOverrider's operators work on one component as text:

- Registry/Repository: ``add`` appends the value, ``replace`` sets it, ``remove`` empties it;
- Tag: ``add`` appends to the tag (or digest), ``replace`` sets it; a value that is a tag replaces
  tag and digest, one that is a digest replaces both too, anything else changes nothing;
  ``remove`` drops tag and digest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Final

__all__ = ["ImageReference", "override_image", "parse_image"]

_ALNUM: Final = r"[a-z0-9]+"
_SEPARATOR: Final = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT: Final = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT: Final = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST: Final = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_NAME: Final = rf"(?:{_HOST}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
# Go's \w is ASCII-only; Python's is not, so spell it out.
_TAG: Final = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST: Final = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE: Final = re.compile(rf"({_NAME})(?::({_TAG}))?(?:@({_DIGEST}))?")
_TAG_ONLY: Final = re.compile(_TAG)
_DIGEST_ONLY: Final = re.compile(_DIGEST)
# go-digest accepts only the algorithms Karmada links in, with their exact lowercase hex length.
_DIGEST_HEX_LENGTHS: Final = {"sha256": 64, "sha384": 96, "sha512": 128}
_NAME_MAX: Final = 255


@dataclass(frozen=True)
class ImageReference:
    """The parts of an image reference; empty strings for the absent ones."""

    registry: str
    repository: str
    tag: str = ""
    digest: str = ""

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}" if self.registry else self.repository
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def _check_digest(digest: str, image: str) -> None:
    algorithm, _, hex_part = digest.partition(":")
    length = _DIGEST_HEX_LENGTHS.get(algorithm)
    if length is None:
        raise ValueError(f"image {image!r}: unsupported digest algorithm {algorithm!r}")
    if len(hex_part) != length or not re.fullmatch(r"[a-f0-9]+", hex_part):
        raise ValueError(f"image {image!r}: invalid {algorithm} digest")


def _split_registry(name: str) -> tuple[str, str]:
    first, slash, rest = name.partition("/")
    if slash and (any(c in first for c in ".:") or first == "localhost"):
        return first, rest
    return "", name


def parse_image(image: str) -> ImageReference:
    """Split an image reference into registry, repository, tag and digest.

    Raises:
        ValueError: the reference is empty, malformed, has an uppercase repository, a name over
            255 characters or an unsupported digest.
    """
    match = _REFERENCE.fullmatch(image)
    if match is None:
        hint = " (repository names are lowercase)" if _REFERENCE.fullmatch(image.lower()) else ""
        raise ValueError(f"invalid image reference {image!r}{hint}")
    name, tag, digest = match.group(1), match.group(2) or "", match.group(3) or ""
    if len(name) > _NAME_MAX:
        raise ValueError(f"image {image!r}: repository name longer than {_NAME_MAX} characters")
    if digest:
        _check_digest(digest, image)
    registry, repository = _split_registry(name)
    return ImageReference(registry, repository, tag, digest)


def _with_tag_or_digest(image: ImageReference, value: str) -> ImageReference:
    if _TAG_ONLY.fullmatch(value):
        return replace(image, tag=value, digest="")
    if _DIGEST_ONLY.fullmatch(value):
        return replace(image, tag="", digest=value)
    return image


def _override_text(current: str, operator: str, value: str) -> str:
    if operator == "add":
        return current + value
    if operator == "replace":
        return value
    if operator == "remove":
        return ""
    raise ValueError(f"unsupported operator {operator!r} (want add, remove or replace)")


def override_image(image: str, component: str, operator: str, value: str = "") -> str:
    """The image with one component changed by an imageOverrider's operator and value.

    Raises:
        ValueError: the image does not parse, or the component or operator is unknown.
    """
    parsed = parse_image(image)
    if component == "Registry":
        changed = replace(parsed, registry=_override_text(parsed.registry, operator, value))
    elif component == "Repository":
        changed = replace(parsed, repository=_override_text(parsed.repository, operator, value))
    elif component == "Tag":
        if operator == "remove":
            changed = replace(parsed, tag="", digest="")
        else:
            current = parsed.tag or parsed.digest
            changed = _with_tag_or_digest(parsed, _override_text(current, operator, value))
    else:
        raise ValueError(f"unsupported image component {component!r} (Registry|Repository|Tag)")
    return str(changed)
