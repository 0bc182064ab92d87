"""The scaffold (``reconcile init``, ``reconcile create api``): names, files, PROJECT, refusals.

The scaffolded project's own ``make test`` runs in tests/e2e/test_wheel.py; here, what is written
and what is refused, and that the Python it writes compiles.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from controllers.cli import main
from reconcile.scaffold import Project, ScaffoldError, create_api, init_project, plural_of
from reconcile.scaffold.render import render
from reconcile.scaffold.scaffold import image_spec


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        ("Guestbook", "guestbooks"),
        ("Policy", "policies"),
        ("Gateway", "gateways"),
        ("Class", "classes"),
        ("Box", "boxes"),
        ("Mesh", "meshes"),
        ("Batch", "batches"),
    ],
)
def test_plurals_follow_english_rules(kind: str, plural: str) -> None:
    assert plural_of(kind) == plural


def test_a_placeholder_without_a_value_is_an_error() -> None:
    assert render("a {{x}} b", {"x": "1"}) == "a 1 b"
    with pytest.raises(ScaffoldError, match=r"\{\{y\}\}"):
        render("{{y}}", {"x": "1"})


def test_init_then_create_api_write_a_project(tmp_path: Path) -> None:
    init_project(tmp_path, domain="example.com", repo="guestbook-operator")
    written = create_api(tmp_path, group="webapp", version="v1", kind="GuestBook")
    names = {str(p.relative_to(tmp_path)) for p in written}
    assert {
        "guestbook_operator/api/v1/guest_book.py",
        "guestbook_operator/controllers/guest_book.py",
        "tests/test_guest_book.py",
        "tests/test_guest_book_fake.py",
    } <= names
    for path in tmp_path.rglob("*.py"):
        ast.parse(path.read_text(), str(path))  # every file written is Python that parses
    project = Project.load(tmp_path)
    assert [(r.group, r.version, r.kind, r.plural) for r in project.resources] == [
        ("webapp", "v1", "GuestBook", "guestbooks")
    ]
    types = (tmp_path / "guestbook_operator/api/v1/guest_book.py").read_text()
    assert 'Kind("webapp.example.com", "GuestBook", scope="Namespaced")' in types
    setup = (tmp_path / "guestbook_operator/controllers/__init__.py").read_text()
    assert "CONTROLLERS: tuple[ModuleType, ...] = (guest_book,)" in setup


def test_a_second_kind_in_the_same_version_keeps_the_first(tmp_path: Path) -> None:
    init_project(tmp_path, domain="example.com", repo="shop")
    create_api(tmp_path, group="store", version="v1", kind="Cart")
    (tmp_path / "shop/api/v1/__init__.py").write_text('"""mine"""\n')
    create_api(tmp_path, group="store", version="v1", kind="Order", namespaced=False)
    assert (tmp_path / "shop/api/v1/__init__.py").read_text() == '"""mine"""\n'
    setup = (tmp_path / "shop/controllers/__init__.py").read_text()
    assert setup.index("    cart,") < setup.index("    order,")
    assert 'scope="Cluster"' in (tmp_path / "shop/api/v1/order.py").read_text()


@pytest.mark.parametrize(
    ("group", "version", "kind", "problem"),
    [
        ("Web", "v1", "Guestbook", "group 'Web'"),
        ("web", "1", "Guestbook", "version '1'"),
        ("web", "v1beta", "Guestbook", "version 'v1beta'"),
        ("web", "v1", "guestbook", "kind 'guestbook'"),
        ("web", "v1", "Guest-book", "kind 'Guest-book'"),
    ],
)
def test_names_the_api_would_refuse_are_refused_first(
    tmp_path: Path, group: str, version: str, kind: str, problem: str
) -> None:
    init_project(tmp_path, domain="example.com", repo="x")
    with pytest.raises(ScaffoldError, match=problem):
        create_api(tmp_path, group=group, version=version, kind=kind)
    assert Project.load(tmp_path).resources == []


def test_nothing_is_overwritten(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("mine\n")
    with pytest.raises(ScaffoldError, match="would overwrite Makefile"):
        init_project(tmp_path, domain="example.com", repo="x")
    assert (tmp_path / "Makefile").read_text() == "mine\n"
    assert not (tmp_path / "PROJECT").exists()


def test_a_kind_twice_and_no_project_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match="reconcile init"):
        create_api(tmp_path, group="web", version="v1", kind="Site")
    init_project(tmp_path, domain="example.com", repo="x")
    create_api(tmp_path, group="web", version="v1", kind="Site")
    with pytest.raises(ScaffoldError, match="already exists"):
        create_api(tmp_path, group="web", version="v1", kind="Site")
    with pytest.raises(ScaffoldError, match="already holds a project"):
        init_project(tmp_path, domain="example.com", repo="x")


def test_bad_domain_and_project_names(tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match="domain"):
        init_project(tmp_path, domain="Example.com", repo="x")
    with pytest.raises(ScaffoldError, match="project name"):
        init_project(tmp_path, domain="example.com", repo="1x")


def test_the_commands_exit_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--domain", "example.com", "--repo", "web", "--dir", str(tmp_path)]) == 0
    create = ["create", "api", "--group", "w", "--version", "v1", "--dir", str(tmp_path)]
    assert main([*create, "--kind", "Site"]) == 0
    assert main([*create, "--kind", "site"]) == 2
    assert "kind 'site' is not valid" in capsys.readouterr().err


@pytest.mark.parametrize("origin", ["checkout", "wheel", "release"])
def test_the_image_takes_reconcile_from_where_the_project_says(tmp_path: Path, origin: str) -> None:
    init_project(tmp_path / "p", domain="example.com", repo="shop")
    project = Project.load(tmp_path / "p")
    checkout, wheel = tmp_path / "reconcile", tmp_path / "reconcile-0.1.0-py3-none-any.whl"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text("")
    wheel.write_bytes(b"wheel")
    project.reconcile = {
        "checkout": f"reconcile @ {checkout.as_uri()}",
        "wheel": wheel.as_uri(),
        "release": "reconcile==0.1.0",
    }[origin]
    project.save(tmp_path / "p")
    spec = image_spec(tmp_path / "p")
    assert spec.name == "shop:0.1.0"
    assert spec.arguments == ("run", "shop.controllers:setup")
    assert spec.projects == (
        (tmp_path / "p", checkout) if origin == "checkout" else (tmp_path / "p",)
    )
    assert spec.wheels == ((wheel,) if origin == "wheel" else ())
    assert spec.requirements == (("reconcile==0.1.0",) if origin == "release" else ())
    assert tmp_path / "p" / "pyproject.toml" in spec.key_files


def test_an_image_of_a_project_whose_reconcile_is_gone_is_an_error(tmp_path: Path) -> None:
    init_project(tmp_path, domain="example.com", repo="shop")
    project = Project.load(tmp_path)
    project.reconcile = (tmp_path / "gone.whl").as_uri()
    project.save(tmp_path)
    with pytest.raises(ScaffoldError, match="reconcile is gone from"):
        image_spec(tmp_path)


def test_an_image_step_that_stalls_or_is_missing_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from reconcile.scaffold import image

    monkeypatch.setattr(image, "STEP_TIMEOUT", 0.2)
    with pytest.raises(image.ImageError, match=r"sleep took more than 0 s; stopped"):
        image._run("sleep", "5")
    with pytest.raises(image.ImageError, match="no-such-tool-here is not installed"):
        image._run("no-such-tool-here")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("layout: [unclosed\n", "is not YAML"),
        ("- a list\n", "is not a reconcile project"),
        ("layout: reconcile.io/v1\ndomain: d\n", "missing"),
        (
            "layout: reconcile.io/v1\ndomain: d\nproject_name: p\npackage: p\nreconcile: r\n"
            "resources: [{group: g}]\n",
            "missing",
        ),
    ],
    ids=["not YAML", "not a mapping", "a field missing", "a resource incomplete"],
)
def test_a_malformed_project_file_is_a_scaffold_error(
    tmp_path: Path, text: str, problem: str
) -> None:
    (tmp_path / "PROJECT").write_text(text)
    with pytest.raises(ScaffoldError, match=problem):
        create_api(tmp_path, group="web", version="v1", kind="Site")
