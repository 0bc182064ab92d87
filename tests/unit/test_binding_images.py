"""Image references parse and change like Karmada's imageparser and imageOverrider."""

from __future__ import annotations

import pytest

from controllers.binding import ImageReference, override_image, parse_image

DIGEST = "sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c"
OTHER_DIGEST = "sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c"
BASE = "fictional.registry.example/imagename:v1.0.0"


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        pytest.param("nginx", ImageReference("", "nginx"), id="a bare name has no registry or tag"),
        pytest.param(
            "library/nginx:1.25",
            ImageReference("", "library/nginx", "1.25"),
            id="a first segment without dot or colon is part of the repository",
        ),
        pytest.param(
            "registry.example:5000/team/app:v1",
            ImageReference("registry.example:5000", "team/app", "v1"),
            id="a registry with a port keeps the port",
        ),
        pytest.param(
            "localhost/app",
            ImageReference("localhost", "app"),
            id="localhost is a registry",
        ),
        pytest.param(
            f"app@{DIGEST}",
            ImageReference("", "app", "", DIGEST),
            id="a digest without a tag",
        ),
        pytest.param(
            f"registry.example/team/app:v1@{DIGEST}",
            ImageReference("registry.example", "team/app", "v1", DIGEST),
            id="a tag and a digest together",
        ),
    ],
)
def test_parse_image(image: str, expected: ImageReference) -> None:
    parsed = parse_image(image)
    assert parsed == expected
    assert str(parsed) == image


@pytest.mark.parametrize(
    ("image", "message"),
    [
        pytest.param("", "invalid image reference", id="an empty image"),
        pytest.param("Nginx", "lowercase", id="an uppercase repository"),
        pytest.param("app@sha256:abc", "invalid image reference", id="a digest too short"),
        pytest.param(f"app@md5:{'a' * 32}", "unsupported digest algorithm", id="md5 digests"),
        pytest.param(f"app@sha256:{'A' * 64}", "invalid sha256 digest", id="uppercase hex"),
        pytest.param("a:b:c", "invalid image reference", id="two tags"),
        pytest.param("x" * 256, "longer than 255", id="a name over 255 characters"),
    ],
)
def test_invalid_images_are_rejected(image: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_image(image)


@pytest.mark.parametrize(
    ("image", "component", "operator", "value", "expected"),
    [
        pytest.param(
            BASE,
            "Registry",
            "add",
            ".test",
            "fictional.registry.example.test/imagename:v1.0.0",
            id="adding to the registry appends",
        ),
        pytest.param(
            "perl:5.34.0",
            "Registry",
            "add",
            "registry.k8s.io",
            "registry.k8s.io/perl:5.34.0",
            id="adding a registry to an image without one prefixes it",
        ),
        pytest.param(
            BASE,
            "Registry",
            "replace",
            "fictional.registry.us",
            "fictional.registry.us/imagename:v1.0.0",
            id="replacing the registry",
        ),
        pytest.param(
            "registry.example:5000/team/app:v1",
            "Registry",
            "replace",
            "mirror.example:443",
            "mirror.example:443/team/app:v1",
            id="replacing a registry with a port",
        ),
        pytest.param(
            BASE,
            "Registry",
            "remove",
            "",
            "imagename:v1.0.0",
            id="removing the registry",
        ),
        pytest.param(
            BASE,
            "Repository",
            "add",
            "/nginx",
            "fictional.registry.example/imagename/nginx:v1.0.0",
            id="adding to the repository appends",
        ),
        pytest.param(
            BASE,
            "Repository",
            "replace",
            "nginx",
            "fictional.registry.example/nginx:v1.0.0",
            id="replacing the repository",
        ),
        pytest.param(
            BASE,
            "Repository",
            "remove",
            "",
            "fictional.registry.example/:v1.0.0",
            id="removing the repository leaves what Karmada leaves",
        ),
        pytest.param(
            BASE,
            "Tag",
            "replace",
            OTHER_DIGEST,
            f"fictional.registry.example/imagename@{OTHER_DIGEST}",
            id="replacing the tag with a digest swaps one for the other",
        ),
        pytest.param(
            BASE,
            "Tag",
            "add",
            OTHER_DIGEST,
            BASE,
            id="appending a digest to a tag makes neither and changes nothing",
        ),
        pytest.param(
            BASE,
            "Tag",
            "add",
            "-debug",
            "fictional.registry.example/imagename:v1.0.0-debug",
            id="appending to a tag",
        ),
        pytest.param(
            "nginx",
            "Tag",
            "replace",
            "1.25",
            "nginx:1.25",
            id="setting a tag on an untagged image",
        ),
        pytest.param(
            BASE,
            "Tag",
            "remove",
            "",
            "fictional.registry.example/imagename",
            id="removing the tag",
        ),
        pytest.param(
            f"registry.example/team/app:v1@{DIGEST}",
            "Registry",
            "replace",
            "mirror.example",
            f"mirror.example/team/app:v1@{DIGEST}",
            id="changing the registry keeps both tag and digest",
        ),
        pytest.param(
            f"registry.example/team/app:v1@{DIGEST}",
            "Tag",
            "replace",
            "v2",
            "registry.example/team/app:v2",
            id="replacing the tag of a tagged digest drops the digest",
        ),
        pytest.param(
            f"registry.example/team/app:v1@{DIGEST}",
            "Tag",
            "remove",
            "",
            "registry.example/team/app",
            id="removing the version drops tag and digest",
        ),
        pytest.param(
            f"app@{DIGEST}",
            "Tag",
            "replace",
            "stable",
            "app:stable",
            id="a tag replaces a digest",
        ),
    ],
)
def test_override_image(
    image: str, component: str, operator: str, value: str, expected: str
) -> None:
    assert override_image(image, component, operator, value) == expected


@pytest.mark.parametrize(
    ("component", "operator", "message"),
    [
        pytest.param("Digest", "add", "unsupported image component", id="an unknown component"),
        pytest.param("Tag", "append", "unsupported operator", id="an unknown operator"),
    ],
)
def test_override_image_rejects_unknown_component_or_operator(
    component: str, operator: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        override_image(BASE, component, operator, "x")
