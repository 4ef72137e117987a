"""Compiler flag lists a Python build function passes (`extra_cuda_cflags=nvcc_flags`), read, not run.

A flag list names its strings: literals, `*(...)` items, and the strings of the names it uses as the
function binds them (its last assignment there, plus every unconditional `flags += [...]`). A flag
under a condition (`x if cond else ()`, `[...] if cond else []`, `if cond: flags += [...]`) is passed
on some paths only (*maybe*); under a toolkit-version test (`is_cuda_version_at_least("12.8")`, the
gate vocabulary's toolkit-version calls) it is passed exactly when the build's toolkit is that new.
A list is *complete* when every part of it is read: literals, names bound once in the function to
complete values, unconditional additions, and the project's arch-flags call (`get_nvcc_flags_list`,
which yields `-gencode` flags and the project's common defines). A name the function does not bind
(a module constant, here or imported) is left to linking (`FlagList.names`). A complete list says
which -D flags the build does not pass. The flag keywords and arch-flags calls are the gate
vocabulary's (`rules/idioms/`).
"""

from __future__ import annotations

from archlint.knowledge.idioms import Idioms
from archlint.lang.python.flagread import Binding, FlagReader
from archlint.model import python as pf
from archlint.model.python import PyExpr


def flag_lists(calls, assigns, extends, idioms: Idioms, params=None) -> tuple[pf.FlagList, ...]:
    """Flag lists passed to build calls. `extends` holds (function, name, value, conditional, path) of
    each `name += value` (`path`: the branch conditions it runs under); a `name.append(...)` or other
    list method is read as an addition on some paths (`mutations`); `params`: each function's
    parameter names, which it binds too."""
    bindings = _bindings(assigns, [*extends, *mutations(calls)], params or {})
    found = []
    for call in calls:
        if not _may_pass_flags(call, idioms.flag_keywords):
            continue
        if _unread_flags(call, idioms.flag_keywords):
            found.append(pf.FlagList(call.function, call.span.line, call.callee, "", (), False))
        for keyword, value in call.kwargs().items():
            if keyword not in idioms.flag_keywords:
                continue
            scope = bindings.get(call.function, {})
            read = FlagReader(_lookup(scope), idioms).read(value)
            if read.sure or read.maybe or read.complete or read.names:
                found.append(pf.FlagList(call.function, call.span.line, call.callee, keyword, read.sure, read.complete,
                                         read.maybe, read.versioned, read.names, read.maybe_names))
    return tuple(found)


_METHOD = "method"  # the `conditional` of an addition a list method makes
_ADDING = frozenset({"append", "extend", "insert"})
_REMOVING = frozenset({"remove", "pop", "clear"})
_LIST_METHODS = _ADDING | _REMOVING


def mutations(calls) -> list[tuple]:
    """`flags.append("-DX")`, `.extend([...])`, `.insert(0, "-DX")` as additions on some paths (a call
    may sit in a loop or a branch), in the shape of `extends` (`conditional`: "method"); `.remove`,
    `.pop` and `.clear` leave the name's value unread."""
    found = []
    for call in calls:
        name, _, method = call.callee.rpartition(".")
        if not name or method not in _LIST_METHODS:
            continue
        args = call.expr.positional()
        if method == "extend" and len(args) == 1:
            value = args[0]
        elif method == "append" and len(args) == 1:
            value = PyExpr("seq", "list", None, (args[0],))
        elif method == "insert" and len(args) == 2:
            value = PyExpr("seq", "list", None, (args[1],))
        else:
            value = PyExpr("other", call.text)
        found.append((call.function, name, value, _METHOD, call.path if method in _ADDING else ()))
    return found


def _bindings(assigns, extends, params) -> dict[str, dict[str, Binding | None]]:
    """Per function, each name it binds: a Binding, or None for one whose value is not read here (a
    parameter, a name unpacked from a tuple)."""
    values: dict[tuple[str, str], list] = {}
    unread: set[tuple[str, str]] = {(function, name) for function, names in params.items() for name in names}
    for assign in assigns:
        for target in assign.targets:
            if assign.unpack:
                unread.add((assign.function, target))
            else:
                values.setdefault((assign.function, target), []).append(assign.value)
    added: dict[tuple[str, str], list] = {}
    some_paths: dict[tuple[str, str], list] = {}
    for function, name, value, conditional, path in extends:
        if conditional:
            some_paths.setdefault((function, name), []).append((value, path, conditional == _METHOD))
        else:
            added.setdefault((function, name), []).append(value)
    out: dict[str, dict[str, Binding | None]] = {}
    for key in set(values) | set(added) | set(some_paths) | unread:
        function, name = key
        assigned = values.get(key, [])
        if key in unread or not assigned:
            # `flags += [...]` on a parameter: what callers pass is not read
            binding = Binding(tuple(added.get(key, ())), tuple(some_paths.get(key, ())), reassigned=True) \
                if key in added or key in some_paths else None
        else:
            binding = Binding((assigned[-1], *added.get(key, ())), tuple(some_paths.get(key, ())), len(assigned) > 1)
        out.setdefault(function, {})[name] = binding
    return out


def _lookup(scope: dict[str, Binding | None]):
    """A name the function binds reads its binding (an unread one: opaque); any other name is the
    module's (its constants, its imports), left to linking, as at module level is every name."""
    def lookup(name: str) -> Binding | None:
        if name in scope:
            binding = scope[name]
            return binding if binding is not None else _UNREAD
        return None
    return lookup


# A name bound in a way not read (a parameter): it holds something, nothing of it is known.
_UNREAD = Binding((PyExpr("other", "?"),))


def _may_pass_flags(call, flag_keywords: frozenset[str]) -> bool:
    """The call has a `**` argument or a keyword that is or names flags: most calls have neither."""
    for arg in call.expr.args[1:]:
        kind = arg.kind
        if kind == "kw":
            if "flags" in arg.text or arg.text in flag_keywords:
                return True
        elif kind == "splat" and arg.text.startswith("**"):
            return True
    return False


def _unread_flags(call, flag_keywords: frozenset[str]) -> bool:
    """Compiler flags the call may pass where they are not read: `**options`, or a flags keyword
    other than the known ones (`extra_cuda_cflags_by_source`)."""
    if any(arg.kind == "splat" and arg.text.startswith("**") for arg in call.expr.args[1:]):
        return True
    return any("flags" in keyword and keyword not in flag_keywords and "ldflags" not in keyword
               for keyword in call.kwargs())
