"""What the linked facts say about a translation unit whatever the build: the constructs of each
file the knowledge base has a row for, and what the unit's include closure holds. Made once per
scan (judge.view.Judging.shared) and read by every build and gate that compiles the same files."""

from __future__ import annotations

from dataclasses import dataclass

from archlint.judge.asserts import TestedAsserts, tested_asserts
from archlint.judge.reach import Unreached, unreached_declarations
from archlint.judge.view import Judging
from archlint.knowledge.kb import Requirement
from archlint.lang.cpp.directives import macro_at
from archlint.model.cuda import Construct


@dataclass(frozen=True)
class Site:
    """A construct the knowledge base has a row for."""

    number: int  # its place among its file's sites: what per-build memos key it by
    construct: Construct
    requirement: Requirement
    described: str  # requirement.describe()
    macro: str  # outside functions, the `#define` whose body holds it ('' for none)
    # an intrinsic's: (path, qualname) of the scanned functions of its name. Where the unit compiles
    # one (TensorRT-LLM's own guarded `cp_async_bulk_commit_group`), the call goes to that
    # definition, judged through the call graph.
    namesakes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class UnitScope:
    """`unreached`: the definitions the unit cannot compile. `sites`: per file, in the file's order,
    the sites the unit may compile: those in a function (compiled when the function is reached) and
    those outside functions that lie in no unreached definition. `asserts`: per file, the
    `static_assert`s that test arch constants of the closure (the last file in path order defines
    a name), with those constants; files with none are left out."""

    unreached: Unreached
    sites: dict[str, tuple[Site, ...]]
    asserts: dict[str, TestedAsserts]


def file_sites(judging: Judging, path: str) -> tuple[Site, ...]:
    facts = judging.index.files[path]
    found: list[Site] = []
    for construct in facts.constructs:
        requirement = judging.kb.requirement(construct.kind, construct.name)
        if requirement is None:
            continue
        macro = None if construct.function else macro_at(facts.defines, construct.line)
        namesakes = judging.index.functions_by_name.get(construct.name.rsplit("::", 1)[-1], ()) if construct.kind == "intrinsic" else ()
        found.append(Site(len(found), construct, requirement, requirement.describe(), macro.name if macro else "",
                          tuple((where, function.qualname) for where, function in namesakes)))
    return tuple(found)


def unit_scope(judging: Judging, key: tuple[str, frozenset[str]]) -> UnitScope:
    """`key`: the unit's source and the files it compiles."""
    source, closure = key
    files = judging.index.files
    paths = sorted(closure)
    unreached = unreached_declarations(files, source, paths)
    constants = {c.name: c for path in paths for c in files[path].arch_constants}
    sites = {path: tuple(site for site in judging.shared(file_sites, path) if site.construct.function
                         or not unreached.covers(path, site.construct.line, site.construct.col))
             for path in paths}
    asserts = {path: tested for path in paths if (tested := tested_asserts(files[path], constants))}
    return UnitScope(unreached, sites, asserts)
