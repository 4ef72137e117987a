"""Build blocks: each architecture list a project's CMake build makes (vLLM's
`cuda_archs_loose_intersection(X_ARCHS "SRC" "${CUDA_ARCHS}")`), followed to the sources compiled
for it (`set_gencode_flags_for_srcs`, or appended inside `if(X_ARCHS)`), the extension target they
join and the `-D` flags the block adds.

The build lists are run twice over (lang/cmake): once with every list taken as admitting (to find
each block's sources and flags, whatever the targets), then once per target asked about, with the
target as the build's architecture list, to learn what each list admits."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from archlint.knowledge.idioms import Idioms
from archlint.knowledge.languages import SOURCE_SUFFIXES
from archlint.lang.cmake.archs import loose_intersection
from archlint.lang.cmake.interpret import ORIGIN, Env, Interpreter, assigned_names
from archlint.lang.cmake.values import UNKNOWN, join_list, known, split_list
from archlint.model.build import BuildBlock, BuildSource, CMakeCommand, CMakeFacts

_REF_RE = re.compile(r"^\$\{([^${}]+)\}$")
_DEFINE_RE = re.compile(r"^-D[A-Za-z_]\w*(=.*)?$")
_ANY = "*"  # the discovery run: every list admits
_GLOB = "\x00glob:"  # a recorded source that is a `file(GLOB)` pattern matching no scanned file
_WHOLE = "whole:"  # the origin of the build's own list (`CUDA_ARCHS = supported ∩ CUDA_ARCHS`)


@dataclass
class _Call:
    command: CMakeCommand
    path: str
    variable: str
    source_archs: tuple[str, ...]
    results: dict[str, tuple[str, ...]] = field(default_factory=dict)  # requested arch -> result


@dataclass
class _Recorder:
    """The hook the interpreter hands build commands to; it records what each run shows."""

    idioms: Idioms
    requested: str  # the arch asked for in this run, or _ANY
    calls: dict[str, _Call]  # shared by the runs: call id -> the call
    wholes: dict[str, _Call] = field(default_factory=dict)  # shared too: the build's own lists
    compiled: dict[str, list[tuple[str, int, tuple[str, ...]]]] = field(default_factory=dict)  # id -> (file, line, archs)
    appended: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # id -> files appended in its block
    defines: dict[str, list[str]] = field(default_factory=dict)  # id -> -D flags added in its block
    entered: dict[str, int] = field(default_factory=dict)  # id -> the line of the `if` its block runs under
    targets: dict[str, list[str]] = field(default_factory=dict)  # extension target -> its sources, `/`-rooted
    uncertain: set[str] = field(default_factory=set)  # ids seen only under conditions archlint cannot decide

    def __call__(self, interp: Interpreter, command: CMakeCommand, args: list[str], env: Env) -> bool:
        name = command.lowered
        context = self._context(interp, env)
        for call_id, line, uncertain in context:
            self.entered.setdefault(call_id, line)
            if uncertain:
                self.uncertain.add(call_id)
        if name in self.idioms.cmake_arch_list_calls:
            return self._intersection(interp, command, args, env)
        gencode = next((row for row in self.idioms.cmake_gencode_calls if row[0] == name), None)
        if gencode is not None:
            self._gencode(interp, command, args, env, gencode[1], gencode[2])
            return True
        extension = next((row for row in self.idioms.cmake_extension_calls if row[0] == name), None)
        if extension is not None:
            if args and known(args[0]):
                files = _keyword_values(args[1:], extension[1])
                self.targets.setdefault(args[0], []).extend(interp.path(f, env) for f in files if known(f))
            return True
        if name == "target_sources" and args:
            files = [a for a in args[1:] if a not in ("PRIVATE", "PUBLIC", "INTERFACE") and known(a)]
            self.targets.setdefault(args[0], []).extend(interp.path(f, env) for f in files)
            self._append(interp, files, command, env, context)
            return True
        if name in ("target_compile_definitions", "add_compile_definitions", "add_definitions"):
            flags = [a if a.startswith("-D") else "-D" + a for a in args[1 if name == "target_compile_definitions" else 0:]
                     if a not in ("PRIVATE", "PUBLIC", "INTERFACE") and known(a)]
            self._define(flags, context)
            return True
        if name == "list" and len(args) > 2 and args[0].upper() in ("APPEND", "PREPEND"):
            self._define([a for a in args[2:] if _DEFINE_RE.match(a)], context)
            self._append(interp, args[2:], command, env, context)
        return False

    def _context(self, interp: Interpreter, env: Env) -> list[tuple[str, int, bool]]:
        """The lists whose `if(X_ARCHS ...)` arms the command runs under, innermost first."""
        out = []
        for arm in reversed(interp.arms):
            if arm.index != 0:
                continue
            for arg in arm.head.args:
                name = _REF_RE.match(arg.text)
                variable = name.group(1) if name else arg.text
                for call_id in env.get(ORIGIN + variable, "").split("|"):
                    if call_id in self.calls:
                        out.append((call_id, arm.head.line, arm.uncertain))
        return out

    def _intersection(self, interp: Interpreter, command: CMakeCommand, args: list[str], env: Env) -> bool:
        if len(args) < 3 or not known(args[0]):
            return False
        out, src, tgt = args[0], split_list(args[1]), split_list(args[2])
        raw_target = _REF_RE.match(command.args[2].text) if len(command.args) > 2 else None
        build_filter = raw_target is not None and raw_target.group(1) == out  # CUDA_ARCHS = supported ∩ CUDA_ARCHS
        if not all(known(a) for a in tgt):  # the build's list comes from outside (TORCH_CUDA_ARCH_LIST)
            tgt = [] if self.requested == _ANY else [self.requested]
        if not all(known(a) for a in src):
            env[out] = UNKNOWN
            env.pop(ORIGIN + out, None)
            return True
        if self.requested == _ANY:
            result = tgt if build_filter else src
        else:
            result = loose_intersection(src, tgt)
        env[out] = join_list(result)
        env.pop(ORIGIN + out, None)
        if build_filter:  # the build's own list: what sources compiled for every arch of the build get
            call_id = f"{interp.current}:{command.line}"
            whole = self.wholes.setdefault(call_id, _Call(command, interp.current, out, tuple(src)))
            if self.requested != _ANY:
                whole.results[self.requested] = tuple(result)
            env[ORIGIN + out] = _WHOLE + call_id
        else:
            call_id = f"{interp.current}:{command.line}"
            call = self.calls.setdefault(call_id, _Call(command, interp.current, out, tuple(src)))
            if self.requested != _ANY:
                call.results[self.requested] = tuple(result)
            env[ORIGIN + out] = call_id
        return True

    def _gencode(self, interp: Interpreter, command: CMakeCommand, args: list[str], env: Env,
                 sources_keyword: str, archs_keyword: str) -> None:
        files = _keyword_values(args, sources_keyword)
        archs = _keyword_values(args, archs_keyword)
        raw = _raw_keyword(command, archs_keyword)
        if raw is None:
            return
        files = [interp.path(f, env) if known(f) else f for f in files if f]
        files += [_GLOB + interp.path(pattern, env) for pattern in _empty_globs(command, env)]
        for call_id in env.get(ORIGIN + raw, "").split("|"):
            if call_id in self.calls and archs:
                if interp.uncertain:
                    self.uncertain.add(call_id)
                self.compiled.setdefault(call_id, []).extend((f, command.line, tuple(archs)) for f in files)
            elif call_id.startswith(_WHOLE):  # in the discovery run the build's list may be unknown: no archs
                self.compiled.setdefault(call_id, []).extend((f, command.line, tuple(archs)) for f in files)

    def _append(self, interp: Interpreter, items: list[str], command: CMakeCommand, env: Env,
                context: list[tuple[str, int, bool]]) -> None:
        files = [interp.path(i, env) if known(i) else i for item in items for i in split_list(item)
                 if i.endswith(SOURCE_SUFFIXES)]
        files += [_GLOB + interp.path(pattern, env) for pattern in _empty_globs(command, env)]
        if context and files:
            self.appended.setdefault(context[0][0], []).extend((f, command.line) for f in files)

    def _define(self, flags: list[str], context: list[tuple[str, int, bool]]) -> None:
        if context and flags:
            self.defines.setdefault(context[0][0], []).extend(flags)


def _keyword_values(args: list[str], keyword: str) -> list[str]:
    """The values after KEYWORD up to the next all-caps keyword argument, lists split."""
    out, on = [], False
    for arg in args:
        if arg == keyword:
            on = True
        elif on and re.fullmatch(r"[A-Z][A-Z0-9_]*", arg) and not arg.endswith(SOURCE_SUFFIXES):
            break
        elif on:
            out.extend(split_list(arg))
    return out


def _empty_globs(command: CMakeCommand, env: Env) -> list[str]:
    """The `file(GLOB)` patterns of the variables the command names that matched no scanned file
    (sources the build generates before it compiles them)."""
    out: list[str] = []
    for arg in command.args:
        for name in re.findall(r"\$\{([^${}]+)\}", arg.text):
            origin = env.get(ORIGIN + name, "")
            if origin.startswith("glob:") and not env.get(name):
                out.extend(p for p in origin[len("glob:"):].split(";") if p)
    return out


def _raw_keyword(command: CMakeCommand, keyword: str) -> str | None:
    """The variable the argument after KEYWORD names as written (`"${X_ARCHS}"` -> X_ARCHS)."""
    texts = [arg.text for arg in command.args]
    if keyword not in texts:
        return None
    index = texts.index(keyword) + 1
    match = _REF_RE.match(texts[index]) if index < len(texts) else None
    return match.group(1) if match else None


def top_lists(files: Mapping[str, CMakeFacts]) -> list[str]:
    """The CMakeLists.txt a build starts from: those with none in a folder above them."""
    lists = sorted(path for path in files if posixpath.basename(path) == "CMakeLists.txt")
    folders = {posixpath.dirname(path) for path in lists}
    return [path for path in lists if not _has_parent(posixpath.dirname(path), folders)]


def _has_parent(folder: str, folders: set[str]) -> bool:
    while folder:
        folder = posixpath.dirname(folder)
        if folder in folders:
            return True
    return False


def build_blocks(files: Mapping[str, CMakeFacts], scanned: tuple[str, ...], idioms: Idioms,
                 toolkit: str, requested: tuple[str, ...]) -> tuple[tuple[BuildBlock, ...], frozenset[str]]:
    """Every build block of the project's CMake build, for the CUDA toolkit `toolkit` (`13.0`), with
    what each list admits for every arch in `requested` (`12.0a`, `9.0`); and the ids (path:line) of
    the blocks archlint saw only under conditions it could not decide."""
    calls: dict[str, _Call] = {}
    wholes: dict[str, _Call] = {}
    preset = {name: toolkit for name in idioms.cmake_toolkit_variables}
    preset.update(dict(idioms.cmake_build_variables))
    assigned = assigned_names(files) - set(preset)
    roots = top_lists(files)
    discovery = _Recorder(idioms, _ANY, calls, wholes)
    for root in roots:
        Interpreter(files, assigned, preset, discovery, scanned).run_file(root)
    entered: dict[str, dict[str, int]] = {}
    for arch in requested:
        run = _Recorder(idioms, arch, calls, wholes)
        for root in roots:
            Interpreter(files, assigned, preset, run, scanned).run_file(root)
        entered[arch] = {call_id: 1 for call_id in run.entered} | {
            call_id: 1 for call_id, events in run.compiled.items() if events}
    blocks = []
    for call_id, call in calls.items():
        if call_id not in discovery.entered and call_id not in discovery.compiled:
            continue  # a list no block uses
        blocks.append(_block(call_id, call, discovery, entered, toolkit, frozenset(scanned)))
    everywhere = {arch: {_WHOLE + call_id: 1 for call_id in wholes} for arch in requested}
    for call_id, call in wholes.items():
        if _WHOLE + call_id in discovery.compiled:
            block = _block(_WHOLE + call_id, call, discovery, everywhere, toolkit, frozenset(scanned))
            blocks.append(replace(block, whole_build=True))
    return tuple(sorted(blocks, key=lambda b: (b.path, b.line))), frozenset(discovery.uncertain)


def _block(call_id: str, call: _Call, discovery: _Recorder, entered: dict[str, dict[str, int]], toolkit: str,
           scanned: frozenset[str]) -> BuildBlock:
    sources: dict[str, BuildSource] = {}
    # a file another list compiles is that list's; the build's own list keeps no block's files
    covered = {f for other, events in discovery.compiled.items() if other != call_id and not other.startswith(_WHOLE)
               for f, _, _ in events}
    for file, line, _ in discovery.compiled.get(call_id, []):
        sources.setdefault(file, _source(file, line, scanned))
    for file, line in discovery.appended.get(call_id, []):
        if file not in covered:
            sources.setdefault(file, _source(file, line, scanned))
    target = ", ".join(name for name, files in sorted(discovery.targets.items()) if any(f in files for f in sources))
    admitted = tuple((arch, call.results.get(arch, ()) if call_id in runs else ())
                     for arch, runs in entered.items())
    command = call.command
    return BuildBlock(
        call.path, command.line, command.col, command.end_line, command.end_col, _text(command), call.variable,
        call.source_archs, tuple(sources.values()), tuple(dict.fromkeys(discovery.defines.get(call_id, []))),
        target, admitted, toolkit, discovery.entered.get(call_id, 0))


def _source(file: str, line: int, scanned: frozenset[str]) -> BuildSource:
    """A source as the block names it: found in the scan, or as written (unknown parts as `${…}`)."""
    if file.startswith(_GLOB):
        pattern = file[len(_GLOB):].lstrip("/")
        return BuildSource(pattern, "", line, glob=pattern)
    if not known(file) or not file.startswith("/"):
        return BuildSource(file.replace(UNKNOWN, "${…}"), "", line)
    relative = file.lstrip("/")
    return BuildSource(relative, relative if relative in scanned else "", line)


def _text(command: CMakeCommand) -> str:
    parts = []
    for arg in command.args:
        parts.append(f'"{arg.text}"' if arg.kind == "quoted" else f"[[{arg.text}]]" if arg.kind == "bracket" else arg.text)
    return f"{command.name}({' '.join(parts)})"
