"""The Python versions the package declares are those its pinned dependencies install on: the
floor in pyproject.toml is at least every pin's Requires-Python (read offline, from the
installed distributions' metadata), and no lower than it must be."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.conftest import ROOT

# Every release of the Pythons the package may meet, 3.11.0 to 3.15.x.
CANDIDATES = [Version(f"3.{minor}.{patch}") for minor in range(11, 16) for patch in range(25)]


def pins() -> dict[str, str]:
    text = (ROOT / "constraints.txt").read_text(encoding="utf-8")
    return dict(line.split("==", 1) for line in text.splitlines()
                if line and not line.startswith("#") and "==" in line)


def requires_python() -> dict[str, SpecifierSet]:
    """Each pinned distribution installed here (at its pinned version): its Requires-Python."""
    found = {}
    for name, version in pins().items():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        spec = dist.metadata["Requires-Python"]  # None where the metadata has none
        if dist.version == version and spec:
            found[name] = SpecifierSet(spec)
    return found


def test_the_declared_pythons_install_every_pinned_dependency() -> None:
    ours = SpecifierSet(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                        ["requires-python"])
    needed = requires_python()
    assert len(needed) > 40  # the pins are installed here: the check is not vacuous
    declared = [v for v in CANDIDATES if v in ours]
    # Each Python we admit (up to the newest any pin admits) installs every pin.
    for name, spec in needed.items():
        too_old = [str(v) for v in declared if v not in spec and v < Version("3.16")]
        assert not too_old, f"{name} {pins()[name]} needs Python {spec}, not {too_old[0]}"
    # And the floor is the true one: the Python just below it is refused by some pin.
    floor = min(declared)
    below = max(v for v in CANDIDATES if v < floor)
    refusing = sorted(n for n, spec in needed.items() if below not in spec)
    assert refusing, f"no pin needs Python {floor}: the floor could be lower"
    assert "pymdown-extensions" in refusing  # the one the docs name


def test_the_docs_say_the_floor() -> None:
    floor = re.search(r">=([\d.]+)", tomllib.loads((ROOT / "pyproject.toml").read_text())
                      ["project"]["requires-python"])
    assert floor is not None
    for doc in ("README.md", "docs/getting-started.md", "docs/development.md"):
        assert f"Python {floor.group(1)}" in (ROOT / doc).read_text(), doc
    tests_yml = (ROOT / ".github" / "workflows" / "tests.yml").read_text()
    assert f'python-version: "{floor.group(1)}"' in tests_yml
