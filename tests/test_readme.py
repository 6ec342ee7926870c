"""README.rst renders without a docutils warning (CI fails on a broken README), and its tour runs as written."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import docutils.core
import docutils.nodes
import docutils.utils

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.rst"
TOUR = "A short tour"
SHOWN_RESULT = re.compile(r"^(\S.*?)\s+# (array\(.*?\))(;.*)?$")


def render(report_level=docutils.utils.Reporter.INFO_LEVEL):
    return docutils.core.publish_doctree(
        README.read_text(),
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


def test_readme_renders_cleanly():
    render()


def test_readme_pictures_exist_and_are_small():
    images = [node["uri"] for node in render().findall(docutils.nodes.image)]
    assert len(images) >= 2
    for uri in images:
        picture = ROOT / uri
        assert picture.read_bytes().startswith(b"\x89PNG"), uri
        assert picture.stat().st_size < 100_000, uri


def test_tour_code_blocks_run_in_order_in_a_fresh_interpreter(tmp_path):
    blocks = literal_blocks(TOUR)
    python = [code for code in blocks if is_python(code)]
    others = [code for code in blocks if not is_python(code)]
    assert len(python) >= 4
    assert all(code.startswith("[project.entry-points") for code in others), "a tour block is neither Python nor TOML"
    script = tmp_path / "tour.py"
    script.write_text("\n\n".join(map(with_checked_results, python)) + '\n\nprint("tour done")\n')
    assert script.read_text().count("assert repr(shown") >= 2
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("tour done")
