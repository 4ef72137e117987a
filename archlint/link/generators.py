"""Sources a CMake build writes before it compiles them, linked to the script that writes them.

vLLM's CMakeLists runs a Python generator (`execute_process(... ${MARLIN_GEN_SCRIPT} ...)`, the
script named by path in the CMake code) and then globs what it wrote:
`file(GLOB ... "csrc/quantization/marlin/sm75_kernel_*.cu")`. The glob matches nothing in an sdist,
but the units it will match are instantiations of templates the script spells as string constants
(extract/python/generator.py). A glob is linked to a script the CMake names that lives in the glob's
folder or the folder above it (machete's `generate.py` writes into `generated/`); the unit is judged
as the glob pattern's file, holding the script's templates.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping

from archlint.lang.cmake.interpret import walk_commands
from archlint.model.build import CMakeFacts

_SCRIPT_RE = re.compile(r"([\w.+-]+(?:/[\w.+-]+)*\.py)\b")


def named_scripts(files: Mapping[str, CMakeFacts], python_paths: Iterable[str]) -> tuple[str, ...]:
    """The scanned Python files a CMake command names by path (`${CMAKE_CURRENT_SOURCE_DIR}/x/gen.py`),
    matched on the written path's tail, sorted."""
    written = {match.group(1).lstrip("./") for facts in files.values() for command in walk_commands(facts.statements)
               for arg in command.args for match in _SCRIPT_RE.finditer(arg.text)}
    written = {text for text in written if "/" in text}  # a bare `setup.py` names no generator of a block
    return tuple(sorted(path for path in python_paths if any(path == text or path.endswith("/" + text) for text in written)))


def writer_of(pattern: str, scripts: Iterable[str]) -> str | None:
    """The script that writes the files a glob pattern collects: the one named script in the glob's
    folder, else in the folder above it; None when there is none or more than one."""
    folder = posixpath.dirname(pattern)
    for where in (folder, posixpath.dirname(folder)):
        found = [script for script in scripts if posixpath.dirname(script) == where]
        if found:
            return found[0] if len(found) == 1 else None
    return None


def fetched_content(facts: CMakeFacts) -> tuple[tuple[str, str], ...]:
    """(name, repository or '') of each `FetchContent_Declare(name ...)` a CMake file makes, in order,
    one per name: the trees the build downloads before it compiles them."""
    out: dict[str, str] = {}
    for command in walk_commands(facts.statements):
        if command.lowered != "fetchcontent_declare" or not command.args:
            continue
        texts = [arg.text for arg in command.args]
        repository = texts[texts.index("GIT_REPOSITORY") + 1] if "GIT_REPOSITORY" in texts[:-1] else ""
        if repository and "${" not in repository:
            out[texts[0]] = repository
        else:
            out.setdefault(texts[0], "")
    return tuple(out.items())
