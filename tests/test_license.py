"""The license pyproject.toml names is the one shipped at the top of the repository."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# The first and last lines of each license text pyproject.toml may name, as the license's steward publishes it.
TEXTS = {
    "Apache-2.0": ("Apache License", "Version 2.0, January 2004", "END OF TERMS AND CONDITIONS"),
}


def test_license_file_holds_the_license_pyproject_names():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    license = project["license"]
    name = license["text"] if isinstance(license, dict) else license
    assert name in TEXTS, f"pyproject.toml names {name!r}: add its text and its markers here"
    text = (REPO / "LICENSE").read_text()
    for marker in TEXTS[name]:
        assert marker in text, marker
    # the full text, not a pointer to it: sections 1 to 9 and the appendix
    assert all(f"\n   {n}. " in text for n in range(1, 10))
    assert "APPENDIX: How to apply the Apache License to your work." in text
