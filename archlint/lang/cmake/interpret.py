"""A small CMake interpreter: runs a project's build lists for one configuration (a CUDA toolkit, the
architectures asked for) far enough to know which lists, sources and flags each block gets.

Only what decides those is run: variables (`set`, `list`, `string`, `option`), `if` with CMake's
conditions, `foreach` over known lists, `include` and `add_subdirectory` of scanned files, and
`file(GLOB)` over the scanned files. A condition archlint cannot decide runs both ways and the
results are merged: a variable the arms leave different becomes unknown; an arm that ends the run
(`return()`, `message(FATAL_ERROR)`) drops out of the merge. A command the interpreter does not
know is handed to `hook` (the build vocabulary), and else leaves the variables it may set unknown.
Nothing of the tree is executed: no process, no file write, no network."""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from archlint.lang.cmake.condition import Condition, Word
from archlint.lang.cmake.values import UNKNOWN, expand, join_list, known, split_list, unescape
from archlint.model.build import CMakeBlock, CMakeCommand, CMakeFacts, CMakeStatement

Env = dict[str, str]
ORIGIN = "\x00origin:"  # env key prefix: which call made a variable's value (kept through list edits)
_MAX_LOOP = 512
_MAX_INCLUDE_DEPTH = 16
_NORMAL, _RETURN, _FATAL, _BREAK, _CONTINUE = "normal", "return", "fatal", "break", "continue"
_OUTPUT_KEYWORDS = {"OUTPUT_VARIABLE", "RESULT_VARIABLE", "ERROR_VARIABLE", "RESULTS_VARIABLE", "RESULT_VAR"}
_FIND = {"find_program", "find_library", "find_path", "find_file", "get_filename_component", "get_property",
         "get_target_property", "get_directory_property", "get_source_file_property"}


@dataclass(frozen=True)
class Arm:
    """An `if` arm being run: its opening command and its place among the arms (0: the `if`)."""

    head: CMakeCommand
    index: int
    path: str
    uncertain: bool  # it runs under a condition (its own or an outer one) archlint could not decide


@dataclass
class Routine:
    """A `function` or `macro` the build lists define: its parameters and which of them name a
    variable it sets for its caller (`set(${OUT} ... PARENT_SCOPE)`)."""

    params: tuple[str, ...]
    outputs: tuple[int, ...]


@dataclass
class Interpreter:
    files: Mapping[str, CMakeFacts]  # root-relative path -> facts
    assigned: frozenset[str]  # every variable name some scanned command sets
    preset: Mapping[str, str]  # what the configuration fixes (toolkit version, platform variables)
    hook: Callable[[Interpreter, CMakeCommand, list[str], Env], bool] | None = None
    scanned: tuple[str, ...] = ()  # every scanned file's root-relative path, for file(GLOB)
    arms: list[Arm] = field(default_factory=list)
    uncertain: int = 0  # > 0 while an arm whose condition is undecided runs
    routines: dict[str, Routine] = field(default_factory=dict)
    current: str = ""  # the file being run
    _depth: int = 0

    # ------------------------------------------------------------------ entry points

    def run_file(self, path: str, env: Env | None = None) -> Env:
        """Run a CMakeLists.txt as the top of a build; its variables at the end."""
        env = {} if env is None else env
        folder = "/" + posixpath.dirname(path)
        for name in ("CMAKE_SOURCE_DIR", "PROJECT_SOURCE_DIR", "CMAKE_CURRENT_SOURCE_DIR", "CMAKE_CURRENT_LIST_DIR"):
            env.setdefault(name, folder.rstrip("/") or "/")
        self._file(path, env)
        return env

    def lookup(self, env: Env, name: str) -> str | None:
        """A variable's value; None when undefined; UNKNOWN when archlint cannot know it."""
        if name in env:
            return env[name]
        if name in self.preset:
            return self.preset[name]
        return None if name in self.assigned else UNKNOWN

    def args(self, command: CMakeCommand, env: Env) -> list[str]:
        """The arguments as the command sees them: references expanded, unquoted ones split."""
        out: list[str] = []
        for arg in command.args:
            if arg.kind == "bracket":
                out.append(arg.text)
            elif arg.kind == "quoted":
                out.append(unescape(self.expand(arg.text, env)))
            else:
                out.extend(split_list(unescape(self.expand(arg.text, env))))
        return out

    def expand(self, text: str, env: Env) -> str:
        return expand(text, lambda name: _defined(self.lookup(env, name)))

    def path(self, written: str, env: Env) -> str:
        """A path as a command names it, against the current source folder: `/`-rooted at the scan root."""
        base = env.get("CMAKE_CURRENT_SOURCE_DIR", "/")
        return posixpath.normpath(posixpath.join(base if known(base) else "/", written))

    def glob(self, patterns: list[str], env: Env, recurse: bool) -> list[str]:
        """The scanned files a `file(GLOB ...)` matches, `/`-rooted, sorted."""
        out = set()
        for pattern in patterns:
            if not known(pattern):
                continue
            full = self.path(pattern, env).lstrip("/")
            for scanned in self.scanned:
                if fnmatch.fnmatchcase(scanned, full) and (recurse or scanned.count("/") == full.count("/")):
                    out.add("/" + scanned)
        return sorted(out)

    # ------------------------------------------------------------------ statements

    def _file(self, path: str, env: Env) -> str:
        facts = self.files.get(path)
        if facts is None or self._depth > _MAX_INCLUDE_DEPTH:
            return _NORMAL
        before, self.current = self.current, path
        self._depth += 1
        try:
            status = self._statements(facts.statements, env)
        finally:
            self._depth -= 1
            self.current = before
        return status

    def _statements(self, statements: tuple[CMakeStatement, ...], env: Env) -> str:
        for statement in statements:
            status = self._block(statement, env) if isinstance(statement, CMakeBlock) else self._command(statement, env)
            if status != _NORMAL:
                return status
        return _NORMAL

    def _block(self, block: CMakeBlock, env: Env) -> str:
        if block.kind == "if":
            return self._if(block, 0, env)
        if block.kind == "foreach":
            return self._foreach(block, env)
        if block.kind in ("function", "macro"):
            self._define(block)
            return _NORMAL
        if block.kind == "block":
            return self._statements(block.clauses[0].body, env) if block.clauses else _NORMAL
        return _NORMAL  # while: not run

    def _if(self, block: CMakeBlock, index: int, env: Env) -> str:
        if index >= len(block.clauses):
            return _NORMAL
        clause = block.clauses[index]
        value = True if clause.head.lowered == "else" else self.condition(clause.head, env)
        if value is False:
            return self._if(block, index + 1, env)
        if value is True:
            return self._arm(clause.head, index, clause.body, env)
        # undecided: both ways, then merged
        taken, passed = dict(env), dict(env)
        self.uncertain += 1
        try:
            first = self._arm(clause.head, index, clause.body, taken)
            second = self._if(block, index + 1, passed)
        finally:
            self.uncertain -= 1
        return _merge(env, [(taken, first), (passed, second)])

    def _arm(self, head: CMakeCommand, index: int, body: tuple[CMakeStatement, ...], env: Env) -> str:
        self.arms.append(Arm(head, index, self.current, self.uncertain > 0))
        try:
            return self._statements(body, env)
        finally:
            self.arms.pop()

    def condition(self, head: CMakeCommand, env: Env) -> bool | None:
        words: list[Word] = []
        for arg in head.args:
            if arg.kind == "unquoted":
                words.extend(Word(item, False) for item in split_list(unescape(self.expand(arg.text, env))))
            else:
                words.append(Word(unescape(self.expand(arg.text, env)) if arg.kind == "quoted" else arg.text, True))
        return Condition(lambda name: self.lookup(env, name)).evaluate(words)

    def _foreach(self, block: CMakeBlock, env: Env) -> str:
        head, body = block.clauses[0].head, block.clauses[0].body
        args = self.args(head, env)
        if not args:
            return _NORMAL
        name, items = args[0], self._loop_items(args[1:], env)
        if items is None:  # unknown items: the body once with an unknown value, or not at all
            taken = dict(env)
            taken[name] = UNKNOWN
            self.uncertain += 1
            try:
                status = self._statements(body, taken)
            finally:
                self.uncertain -= 1
            return _merge(env, [(taken, _NORMAL if status in (_BREAK, _CONTINUE) else status), (dict(env), _NORMAL)])
        for item in items[:_MAX_LOOP]:
            env[name] = item
            status = self._statements(body, env)
            if status == _BREAK:
                break
            if status not in (_NORMAL, _CONTINUE):
                return status
        return _NORMAL

    def _loop_items(self, args: list[str], env: Env) -> list[str] | None:
        if args and args[0] == "RANGE":
            return None
        if args and args[0] == "IN":
            items: list[str] = []
            mode = ""
            for arg in args[1:]:
                if arg in ("LISTS", "ITEMS", "ZIP_LISTS"):
                    mode = arg
                elif mode == "LISTS":
                    items.extend(split_list(_defined(self.lookup(env, arg))))
                elif mode == "ITEMS":
                    items.append(arg)
                else:
                    return None
            args = items
        return None if any(not known(item) for item in args) else args

    def _define(self, block: CMakeBlock) -> None:
        head = block.clauses[0].head
        names = [arg.text for arg in head.args]
        if not names:
            return
        params = tuple(names[1:])
        outputs = set()
        for statement in walk_commands(block.clauses[0].body):
            if statement.lowered in ("set", "list", "string") and statement.args:
                for arg in statement.args[:4]:
                    for index, param in enumerate(params):
                        if arg.text == "${" + param + "}":
                            outputs.add(index)
        self.routines[names[0].lower()] = Routine(params, tuple(sorted(outputs)))

    # ------------------------------------------------------------------ commands

    def _command(self, command: CMakeCommand, env: Env) -> str:
        name = command.lowered
        if name in ("return",):
            return _RETURN
        if name in ("break", "continue"):
            return _BREAK if name == "break" else _CONTINUE
        args = self.args(command, env)
        if self.hook is not None and self.hook(self, command, args, env):
            return _NORMAL
        handler = _BUILTINS.get(name)
        if handler is not None:
            return handler(self, args, env) or _NORMAL
        routine = self.routines.get(name)
        if routine is not None:
            for index in routine.outputs:
                if index < len(args) and known(args[index]):
                    _assign(env, args[index], UNKNOWN)
        return _NORMAL

    def _include(self, args: list[str], env: Env) -> str | None:
        if not args or not known(args[0]):
            return None
        written = args[0]
        target = self.path(written, env).lstrip("/")
        if target not in self.files and not written.endswith(".cmake"):
            target = self._module(written, env)
        if target not in self.files:
            return None
        before = env.get("CMAKE_CURRENT_LIST_DIR")
        env["CMAKE_CURRENT_LIST_DIR"] = "/" + posixpath.dirname(target)
        status = self._file(target, env)
        if before is not None:
            env["CMAKE_CURRENT_LIST_DIR"] = before
        return _FATAL if status == _FATAL else None

    def _module(self, name: str, env: Env) -> str:
        """`include(utils)`: `utils.cmake` in a folder of CMAKE_MODULE_PATH."""
        for folder in split_list(_defined(self.lookup(env, "CMAKE_MODULE_PATH"))):
            if known(folder):
                candidate = self.path(posixpath.join(folder, name + ".cmake"), env).lstrip("/")
                if candidate in self.files:
                    return candidate
        return ""

    def _subdirectory(self, args: list[str], env: Env) -> str | None:
        if not args or not known(args[0]):
            return None
        folder = self.path(args[0], env)
        target = posixpath.join(folder, "CMakeLists.txt").lstrip("/")
        if target in self.files:
            child = dict(env)
            child["CMAKE_CURRENT_SOURCE_DIR"] = child["CMAKE_CURRENT_LIST_DIR"] = folder
            self._file(target, child)
        return None


def _defined(value: str | None) -> str:
    return "" if value is None else value


def _assign(env: Env, name: str, value: str | None) -> None:
    """A plain assignment: the variable's value, and no call made it any more."""
    env.pop(ORIGIN + name, None)
    if value is None:
        env.pop(name, None)
    else:
        env[name] = value


def _merge(env: Env, arms: list[tuple[Env, str]]) -> str:
    """The arms that went on, merged into env; when none did, how the first one ended."""
    live = [arm for arm, status in arms if status == _NORMAL]
    if not live:
        return next(status for _, status in arms if status != _NORMAL)
    names = set().union(*live)
    env.clear()
    for name in names:
        values = {arm.get(name) for arm in live}
        if len(values) == 1:
            value = values.pop()
            if value is not None:
                env[name] = value
        elif not name.startswith(ORIGIN):
            env[name] = UNKNOWN
        else:  # the list came from different calls on different paths: keep both
            env[name] = "|".join(sorted(v for v in values if v))
    return _NORMAL


def walk_commands(statements: tuple[CMakeStatement, ...]):
    """Every command of a file, the heads of its blocks' clauses included, in order."""
    for statement in statements:
        if isinstance(statement, CMakeBlock):
            for clause in statement.clauses:
                yield clause.head
                yield from walk_commands(clause.body)
        else:
            yield statement


def assigned_names(files: Mapping[str, CMakeFacts]) -> frozenset[str]:
    """Every variable name a scanned command sets by name (`set(X ..)`, `list(APPEND X ..)`, ...)."""
    names = set()
    for facts in files.values():
        for command in walk_commands(facts.statements):
            args = [arg.text for arg in command.args]
            if not args:
                continue
            if command.lowered in ("set", "option", "unset"):
                names.add(args[0])
            elif command.lowered == "list" and len(args) > 1:
                names.add(args[1])
            elif command.lowered in ("foreach",):
                names.add(args[0])
            elif command.lowered == "file" and len(args) > 1 and args[0].startswith("GLOB"):
                names.add(args[1])
    return frozenset(name for name in names if "$" not in name)


# ---------------------------------------------------------------------- builtin commands


def _set(interp: Interpreter, args: list[str], env: Env) -> None:
    if not args or args[0].startswith("ENV{") or not known(args[0]):
        return
    name, values = args[0], args[1:]
    if "PARENT_SCOPE" in values:
        return
    if "CACHE" in values:
        values = values[: values.index("CACHE")]
        if name in env:
            return
    _assign(env, name, join_list(values) if values else None)


def _unset(interp: Interpreter, args: list[str], env: Env) -> None:
    if args and known(args[0]):
        _assign(env, args[0], None)


def _option(interp: Interpreter, args: list[str], env: Env) -> None:
    if args and args[0] not in env and known(args[0]):
        env[args[0]] = args[2] if len(args) > 2 else "OFF"


def _list(interp: Interpreter, args: list[str], env: Env) -> None:
    if len(args) < 2 or not known(args[1]):
        return
    op, name = args[0].upper(), args[1]
    items = split_list(_defined(interp.lookup(env, name)))
    rest = args[2:]
    if op == "APPEND":
        env[name] = join_list(items + rest)
    elif op == "PREPEND":
        env[name] = join_list(rest + items)
    elif op == "REMOVE_ITEM":
        env[name] = join_list([i for i in items if i not in rest]) if all(known(r) for r in rest) else UNKNOWN
    elif op == "REMOVE_DUPLICATES":
        env[name] = join_list(list(dict.fromkeys(items)))
    elif op in ("LENGTH", "JOIN") and rest:
        value = str(len(items)) if op == "LENGTH" else rest[0].join(items) if len(rest) > 1 else UNKNOWN
        _assign(env, rest[-1], value if all(known(i) for i in items) else UNKNOWN)
    elif op in ("GET", "FIND", "SUBLIST") and rest:
        _assign(env, rest[-1], UNKNOWN)
    elif op not in ("SORT",):
        env[name] = UNKNOWN


def _string(interp: Interpreter, args: list[str], env: Env) -> None:
    if len(args) < 2:
        return
    op = args[0].upper()
    if op == "APPEND":
        env[args[1]] = _defined(interp.lookup(env, args[1])) + "".join(args[2:])
    elif op == "REPLACE" and len(args) >= 4:
        _assign(env, args[3], "".join(args[4:]).replace(args[1], args[2]) if known(args[1]) else UNKNOWN)
    elif op in ("TOLOWER", "TOUPPER", "STRIP") and len(args) >= 3:
        value = args[1]
        result = value.lower() if op == "TOLOWER" else value.upper() if op == "TOUPPER" else value.strip()
        _assign(env, args[2], result if known(value) else UNKNOWN)
    elif op == "REGEX" and len(args) >= 4:
        position = 4 if args[1].upper() == "REPLACE" else 3
        if position < len(args) + 1 and len(args) > position - 1:
            _assign(env, args[position], UNKNOWN)
    else:
        _assign(env, args[-1], UNKNOWN)


def _file(interp: Interpreter, args: list[str], env: Env) -> None:
    if len(args) < 2:
        return
    op = args[0].upper()
    if op in ("GLOB", "GLOB_RECURSE"):
        patterns, skip = [], False
        for arg in args[2:]:
            if skip:
                skip = False
            elif arg in ("LIST_DIRECTORIES", "RELATIVE"):
                skip = True
            elif arg not in ("CONFIGURE_DEPENDS", "FOLLOW_SYMLINKS"):
                patterns.append(arg)
        found = interp.glob(patterns, env, op == "GLOB_RECURSE")
        _assign(env, args[1], join_list(found))
        env[ORIGIN + args[1]] = "glob:" + ";".join(patterns)
    elif op in ("READ", "STRINGS", "MD5", "SHA1", "SHA256", "REAL_PATH", "RELATIVE_PATH", "SIZE", "TIMESTAMP"):
        _assign(env, args[2] if op in ("READ", "STRINGS", "MD5", "SHA1", "SHA256", "REAL_PATH", "SIZE") and len(args) > 2
                else args[1], UNKNOWN)


def _outputs(interp: Interpreter, args: list[str], env: Env) -> None:
    """Commands that set a variable named by a keyword (`OUTPUT_VARIABLE X`)."""
    for keyword, value in zip(args, args[1:]):
        if keyword in _OUTPUT_KEYWORDS and known(value):
            _assign(env, value, UNKNOWN)


def _first_unknown(interp: Interpreter, args: list[str], env: Env) -> None:
    if args and known(args[0]):
        _assign(env, args[0], UNKNOWN)


def _message(interp: Interpreter, args: list[str], env: Env) -> str | None:
    return _FATAL if args and args[0] == "FATAL_ERROR" else None


_BUILTINS: dict[str, Callable[[Interpreter, list[str], Env], str | None]] = {
    "set": _set,
    "unset": _unset,
    "option": _option,
    "list": _list,
    "string": _string,
    "file": _file,
    "execute_process": _outputs,
    "include": lambda interp, args, env: interp._include(args, env),
    "add_subdirectory": lambda interp, args, env: interp._subdirectory(args, env),
    "message": _message,
    **dict.fromkeys(_FIND, _first_unknown),
}
