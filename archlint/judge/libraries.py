"""Vendor library calls a unit makes (cuBLASLt, cuBLAS, NCCL, cuDNN), judged by what the library
documents (rules/kb/libraries.toml, archlint/knowledge/libraries.py).

A library runs its own kernels, so a unit whose only device work is a library call has no kernel of
its own to judge: what it needs is what its calls need. A call's forms are told by the identifiers the
code the unit compiles spells (`CUDA_R_8F_E4M3`: an FP8 matmul). Where every form the unit can make
has documented support for the target, the call is checked (a POLICY verdict's evidence); where every
form lacks it and the call surely runs, it is a blocker; anything else leaves the verdict UNKNOWN,
with the call named.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Collection
from dataclasses import dataclass

from archlint.judge.hits import Hit, HitKind
from archlint.knowledge.libraries import LibraryCall, LibraryKnowledge, Support
from archlint.model.cuda import Construct
from archlint.model.findings import Evidence, EvidenceKind, Location
from archlint.model.gates import CheckedConstruct

_SETTLE = "settle with {library}'s documentation for {target}, added as a row of rules/kb/libraries.toml"


@dataclass(frozen=True)
class LibraryHits:
    blockers: tuple[Hit, ...] = ()
    possible: tuple[Hit, ...] = ()
    checked: tuple[CheckedConstruct, ...] = ()  # calls every form of which the target has
    calls: tuple[str, ...] = ()  # the library calls doing device work the unit compiles for the target, sorted


@dataclass(frozen=True)
class _Place:
    path: str
    construct: Construct

    def where(self) -> str:
        function = self.construct.function
        return f" in `{function.split('::')[-1]}`" if function else " at file scope"

    def location(self) -> Location:
        return Location(self.path, self.construct.line, self.construct.col)


def library_hits(view, files: Collection[str], compiled_in: Callable[[str], Callable], surely: set[tuple[str, str]],
                 source: str, chains: Callable[[str], tuple[Evidence, ...]]) -> LibraryHits:
    """The unit's library calls for one target. `compiled_in(path)`: whether the unit compiles a site of
    that file; `surely`: the functions it compiles whatever undecided conditions say; `chains(path)`:
    the hops from the unit to a file."""
    libraries: LibraryKnowledge = view.kb.libraries
    calls, forms = _library_sites(view, files, compiled_in, libraries)
    blockers: list[Hit] = []
    possible: list[Hit] = []
    checked: list[CheckedConstruct] = []
    for place in calls:
        sure = (place.path, place.construct.function) in surely if place.construct.function else place.path == source
        hit, item = _judge_call(view.target, libraries, place, forms, sure, chains(place.path))
        if item is not None:
            checked.append(item)
        elif hit is not None:
            (blockers if hit.certain else possible).append(hit)
    return LibraryHits(tuple(blockers), tuple(possible), tuple(checked), tuple(sorted({p.construct.name for p in calls})))


def _library_sites(view, files, compiled_in, libraries: LibraryKnowledge) -> tuple[list[_Place], dict[str, _Place]]:
    """The library calls the unit compiles (host pass), and the form names it spells, each at its first place."""
    calls: list[_Place] = []
    forms: dict[str, _Place] = {}
    for path in sorted(files):
        compiled = compiled_in(path)
        for construct in view.index.files[path].constructs:
            if construct.kind != "library" or not compiled(construct) or view.truth(path, construct.region, host=True) == 0:
                continue
            if construct.name in libraries.form_names:
                forms.setdefault(construct.name, _Place(path, construct))
            elif construct.name not in view.index.functions_by_name:  # else the project's own function
                calls.append(_Place(path, construct))
    return calls, forms


def _judge_call(target, libraries: LibraryKnowledge, place: _Place, forms: dict[str, _Place], sure: bool,
                chain: tuple[Evidence, ...]) -> tuple[Hit | None, CheckedConstruct | None]:
    name = place.construct.name
    library = libraries.library_of(name)
    label = f"`{name}` ({library.name if library else 'library'}){place.where()}"
    rows = libraries.rows(name)
    made = [(row, form) for row in rows for form in _made(row, forms)]
    settle = _SETTLE.format(library=library.name if library else "the library", target=target)
    if not rows:
        message = f"{label} does device work the knowledge base has no row for; what it needs on {target} is not known"
        return _hit(place, message, chain, False, settle), None
    if not made:
        names = ", ".join(f"`{n}`" for n in sorted({n for row in rows for n in row.form.split("|")})[:4])
        message = (f"{label}: the unit spells none of the names its forms are told by ({names}, ...), so what it needs "
                   f"on {target} is not known")
        return _hit(place, message, chain, False, settle), None
    support = [(row, form, row.support(target)) for row, form in made]
    missing = [item for item in support if item[2] is not Support.HAS]
    if not missing:
        return None, _checked(target, place, support)
    row, form, state = next((item for item in missing if item[2] is Support.LACKS), missing[0])
    every = len(missing) == len(support) and all(item[2] is Support.LACKS for item in missing)
    verb = "runs" if every else "may run"
    lacks = f"; {target} lacks it" if state is Support.LACKS else f", not for {target}"
    message = f"{label} {verb} {row.summary}{_form_text(form)}, which {row.describe()}{lacks} [{row.id}]"
    if len(missing) > 1:
        message += f" (+{len(missing) - 1} more form{'s' if len(missing) > 2 else ''})"
    certain = every and sure
    return _hit(place, message, chain, certain, "" if certain else settle), None


def _made(row: LibraryCall, forms: dict[str, _Place]) -> list[_Place | None]:
    """Whether the unit makes this form: [None] for a row with no form (every call makes it), else the
    place of the first name of the form it spells ([] where it spells none)."""
    if row.form_re is None:
        return [None]
    spelled: list[_Place | None] = [forms[name] for name in sorted(forms) if row.form_re.fullmatch(name)]
    return spelled[:1]


def _form_text(form: _Place | None) -> str:
    return f" (`{form.construct.name}`, {posixpath.basename(form.path)}:{form.construct.line})" if form is not None else ""


def _hit(place: _Place, message: str, chain: tuple[Evidence, ...], certain: bool, settle: str) -> Hit:
    hop = Evidence(place.location(), message, EvidenceKind.CONSTRUCT, name=place.construct.name)
    return Hit(HitKind.LIBRARY, place.location(), message, chain + (hop,), certain, settle)


def _checked(target, place: _Place, support: list) -> CheckedConstruct:
    """A call every form of which the target has: what was checked, for a POLICY verdict's evidence."""
    rows = [row for row, _, _ in support]
    kinds = " or ".join(f"{row.summary}{_form_text(form)}" for row, form, _ in support)
    message = (f"`{place.construct.name}` ({rows[0].library}){place.where()} runs {kinds}, each documented for "
               f"{target} [{', '.join(row.id for row in rows)}]")
    hop = Evidence(place.location(), message, EvidenceKind.CHECKED, name=place.construct.name)
    needs = "; ".join(f"{row.summary}, documented for {row.coverage()}" for row in rows)
    return CheckedConstruct(hop, "", 0, "", ", ".join(row.id for row in rows), needs)
