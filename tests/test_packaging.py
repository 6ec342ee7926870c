"""The distribution ships every package folder of the repository, whose sources cite only files in it."""

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]

PACKAGE_FOLDERS = ("adapters", "linker", "sampling")
"""The repository's top-level folders of the package's sources."""


def test_every_package_folder_is_mapped_into_the_aejax_namespace():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = {folder: package for package, folder in config["package-dir"].items()}
    folders = {
        str(init.parent.relative_to(ROOT)) for top in PACKAGE_FOLDERS for init in (ROOT / top).rglob("__init__.py")
    }
    assert folders == set(mapped)
    assert sorted(mapped.values()) == sorted(config["packages"])
    assert all(package.startswith("aejax.") for package in config["packages"])


def test_builtin_codecs_are_published_as_entry_points():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set(project["entry-points"]["aejax.codecs"])
    assert "jax:aesara.tensor.random.type.RandomGeneratorType" in names
    assert "jax:aesara.tensor.type.TensorType" in names


def test_sources_cite_only_files_in_the_repository():
    # A name in a string literal ("program.json") is data, not a citation.
    cited = re.compile(r"(?<![\w./\"-])[\w./-]+\.(?:md|rst|toml|json|png|py)\b(?!\")")
    missing = {
        (str(path.relative_to(ROOT)), name)
        for top in PACKAGE_FOLDERS
        for path in (ROOT / top).rglob("*.py")
        for name in cited.findall(path.read_text())
        if not any((folder / name).exists() for folder in (ROOT, path.parent))
    }
    assert not missing
