"""README.rst and docs/ render without a docutils message (CI fails on a broken README), their links and the
names they cite exist, the map of the code lists every module, and the README's tour runs as written."""

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import docutils.core
import docutils.nodes
import docutils.utils
import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.rst"
DOCS = ROOT / "docs"
ARCHITECTURE = DOCS / "architecture.md"
TOUR = "A short tour"
SHOWN_RESULT = re.compile(r"^(\S.*?)\s+# (array\(.*?\))(;.*)?$")
AEJAX_WARNINGS_FAIL = 'import warnings\nwarnings.filterwarnings("error", module=r"aejax\\.")\n\n'
"""Put first in the tour: a warning attributed to aejax's own code (JAX's, given where aejax calls it) fails it."""
CI_TEST_COMMANDS = (
    re.compile(r"^    pip install -e '\.\[pins,clients,test\]' && python -m pytest$", re.MULTILINE),
    re.compile(
        r"^    pip install --no-deps aesara==2\.9\.4 .*&& pip install -e '\.\[test[\],]" r".*&& python -m pytest$",
        re.MULTILINE,
    ),
)
"""What ``.ci/run`` greps README.rst for and runs, one command per stack: the old pins, the current stack."""
MAX_README_LINES = 220
"""The README is a front door; detail belongs in docs/ (a hook warns above this)."""

RST_FILES = [README, *sorted(DOCS.glob("*.rst"))]
MD_FILES = sorted(DOCS.glob("*.md"))
MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
MD_HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.MULTILINE)
MD_FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```", re.MULTILINE | re.DOTALL)
DOTTED = re.compile(r"\baejax\.(?:linker|adapters|sampling)(?:\.\w+)+")
PACKAGE_FOLDERS = {"linker": ROOT / "linker", "adapters": ROOT / "adapters", "sampling": ROOT / "sampling"}


def _name(path):
    return str(path.relative_to(ROOT))


def render(path=README, report_level=docutils.utils.Reporter.INFO_LEVEL):
    """The doctree of ``path``; any docutils message at ``report_level`` or above raises (as the hook does)."""
    return docutils.core.publish_doctree(
        path.read_text(),
        source_path=str(path),
        settings_overrides={"report_level": report_level, "halt_level": report_level},
    )


def literal_blocks(title):
    """The literal blocks of the README's top-level section ``title``, in order."""
    sections = [s for s in render().findall(docutils.nodes.section) if s[0].astext() == title]
    assert len(sections) == 1, f"README has no single section {title!r}"
    return [block.astext() for block in sections[0].findall(docutils.nodes.literal_block)]


def is_python(code):
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def with_checked_results(code):
    """``code`` with each ``expression  # array(...)`` line turned into an assertion that it shows that array."""
    lines = []
    for line in code.splitlines():
        match = SHOWN_RESULT.match(line)
        lines.append(f"assert repr(shown := {match[1]}) == {match[2]!r}, repr(shown)" if match else line)
    return "\n".join(lines)


def is_relative(target):
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) and not target.startswith("#")


def relative_links(path):
    """The relative link and picture targets of a README or docs file, as written."""
    if path.suffix == ".rst":
        tree = render(path)
        targets = [node["refuri"] for node in tree.findall(docutils.nodes.reference) if "refuri" in node]
        targets += [node["uri"] for node in tree.findall(docutils.nodes.image)]
    else:
        targets = MD_LINK.findall(path.read_text())
    return [target for target in targets if is_relative(target)]


def md_anchor(heading):
    """The anchor GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_readme_renders_cleanly():
    render()


@pytest.mark.parametrize("path", RST_FILES[1:], ids=_name)
def test_docs_rst_files_render_cleanly(path):
    render(path)


def test_readme_keeps_the_ci_test_command_and_stays_short():
    text = README.read_text()
    assert all(command.search(text) for command in CI_TEST_COMMANDS), ".ci/run finds no test command in README.rst"
    assert len(text.splitlines()) <= MAX_README_LINES


def test_readme_names_every_public_warning():
    tree = ast.parse((ROOT / "linker" / "__init__.py").read_text())
    exported = next(
        node.value for node in tree.body if isinstance(node, ast.Assign) and node.targets[0].id == "__all__"
    )
    warnings = [name for name in ast.literal_eval(exported) if name.endswith("Warning")]
    assert len(warnings) >= 4
    text = README.read_text()
    assert [name for name in warnings if name not in text] == []


def test_pictures_exist_and_are_small():
    pictures = {path: [node["uri"] for node in render(path).findall(docutils.nodes.image)] for path in RST_FILES}
    assert pictures[README], "the README shows no picture"
    for path, uris in pictures.items():
        for uri in uris:
            picture = path.parent / uri
            assert picture.read_bytes().startswith(b"\x89PNG"), (_name(path), uri)
            assert picture.stat().st_size < 100_000, (_name(path), uri)


@pytest.mark.parametrize("path", RST_FILES + MD_FILES, ids=_name)
def test_relative_links_point_to_files_that_exist(path):
    links = relative_links(path)
    missing = [link for link in links if not (path.parent / link.partition("#")[0]).exists()]
    assert not missing, f"{_name(path)} links to files that do not exist: {missing}"


def test_readme_links_to_each_docs_file():
    linked = {(ROOT / link.partition("#")[0]).resolve() for link in relative_links(README)}
    assert {path.resolve() for path in [*RST_FILES[1:], *MD_FILES]} <= linked


def test_links_to_markdown_headings_find_them():
    for path in RST_FILES + MD_FILES:
        for link in relative_links(path):
            target, _, anchor = link.partition("#")
            if anchor and target.endswith(".md"):
                headings = MD_HEADING.findall((path.parent / target).read_text())
                assert anchor in map(md_anchor, headings), f"{_name(path)}: no heading for {link}"


def test_python_blocks_in_docs_parse():
    blocks = [
        (path, code) for path in MD_FILES for lang, code in MD_FENCE.findall(path.read_text()) if lang == "python"
    ]
    assert blocks
    unparsed = [(_name(path), code) for path, code in blocks if not is_python(textwrap.dedent(code))]
    assert not unparsed


def _defines(module, name):
    """Whether module file ``module`` defines or imports ``name`` at its top level."""
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return True
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (alias.asname or alias.name).split(".")[0] == name for alias in node.names
        ):
            return True
    return False


def _resolves(dotted):
    """Whether ``aejax.<package>.<...>`` names a module of the repository or a name one defines (read, not imported)."""
    parts = dotted.split(".")[1:]
    folder = PACKAGE_FOLDERS[parts[0]]
    for index, part in enumerate(parts[1:], start=1):
        if (folder / part / "__init__.py").exists():
            folder = folder / part
        elif (folder / f"{part}.py").exists():
            return index == len(parts) - 1 or _defines(folder / f"{part}.py", parts[index + 1])
        else:
            return _defines(folder / "__init__.py", part)
    return True


def test_dotted_aejax_names_in_docs_exist():
    unresolved = {
        (_name(path), dotted)
        for path in RST_FILES + MD_FILES
        for dotted in DOTTED.findall(path.read_text())
        if not _resolves(dotted)
    }
    assert not unresolved


def test_the_name_check_sees_a_missing_name():
    assert _resolves("aejax.linker.program.host_node.HostNodeWarning")
    assert _resolves("aejax.linker.mode")
    assert not _resolves("aejax.linker.program.host_node.NoSuchName")
    assert not _resolves("aejax.linker.no_such_module")


def _mapped_modules():
    """``(folder, file)`` for each module the map in docs/architecture.md lists under its folder's heading."""
    mapped, folder = set(), None
    for line in ARCHITECTURE.read_text().splitlines():
        heading = re.match(r"^### `([\w/]+)/`", line)
        if heading:
            folder = heading[1]
        elif line.startswith("## "):
            folder = None
        elif folder and (entry := re.match(r"^- `(\w+\.py)`", line)):
            mapped.add((folder, entry[1]))
    return mapped


def test_architecture_maps_every_module():
    modules = {
        (str(path.parent.relative_to(ROOT)), path.name)
        for folder in PACKAGE_FOLDERS.values()
        for path in folder.rglob("*.py")
    }
    mapped = _mapped_modules()
    unmapped = {module for module in modules - mapped if module[1] != "__init__.py"}
    assert not unmapped, f"docs/architecture.md has no line for {sorted(unmapped)}"
    assert not mapped - modules, f"docs/architecture.md maps modules that do not exist: {sorted(mapped - modules)}"


def test_benchmark_options_in_the_docs_exist():
    scripts = ("run.py", "compile_times.py", "many_chains.py", "chains_runner.py", "cold_start.py", "eight_schools.py")
    runners = "".join((ROOT / "benchmarks" / name).read_text() for name in scripts)
    options = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", (DOCS / "benchmarks.rst").read_text()))
    assert {"--rounds", "--save", "--only", "--skip-c", "--cpu-sync-dispatch", "--load", "--rst", "--plot"} <= options
    assert [option for option in sorted(options) if f'"{option}"' not in runners] == []


def test_tour_code_blocks_run_in_order_in_a_fresh_interpreter_without_a_warning_from_aejax_code(tmp_path):
    """In a fresh process, as a reader runs it: JAX's ``jax_enable_x64`` off, aejax's own code warns of nothing."""
    blocks = literal_blocks(TOUR)
    python = [code for code in blocks if is_python(code)]
    others = [code for code in blocks if not is_python(code)]
    assert len(python) >= 4
    assert all(code.startswith("[project.entry-points") for code in others), "a tour block is neither Python nor TOML"
    script = tmp_path / "tour.py"
    script.write_text(AEJAX_WARNINGS_FAIL + "\n\n".join(map(with_checked_results, python)) + '\n\nprint("tour done")\n')
    assert script.read_text().count("assert repr(shown") >= 2
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("tour done")
