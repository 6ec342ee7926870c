"""README.rst renders without a docutils warning (CI fails on a broken README)."""

from pathlib import Path

import docutils.core
import docutils.utils

README = Path(__file__).resolve().parent.parent / "README.rst"


def test_readme_renders_cleanly():
    docutils.core.publish_string(
        README.read_text(),
        writer_name="null",
        settings_overrides={"report_level": docutils.utils.Reporter.INFO_LEVEL, "halt_level": docutils.utils.Reporter.INFO_LEVEL},
    )
