"""Prove a verdict with the compiler: build a gate's guarded translation units for the excluded target.

`nvcc -cubin -arch=<target>` in a scratch folder (never in the scanned tree), keeping the PTX so
each kernel's body can be read: a body that is only `ret;` is empty (the silent no-op the gate is
stopping), a body that only traps is a trap. Failures are sorted into arch errors (ptxas rejects an
instruction, the front end rejects a feature for this architecture) and inconclusive ones (missing
framework headers, `#error` about toolkit versions, timeouts), each with the reason.

Answers are cached on disk, keyed by the unit's content, the target, the flags and the nvcc
version, and validated against the mtime and size of every header the compile read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path

from archlint.probe.nvcc import default_cache_dir, find_nvcc, nvcc_version

__all__ = ["default_cache_dir", "find_nvcc", "nvcc_version"]  # re-exported: the runtime front end's callers

OUTCOMES = ("built", "built-empty", "built-trap", "arch-error", "inconclusive")
TU_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
CACHE_VERSION = 1


@dataclass(frozen=True)
class ProbeResult:
    unit: str
    target: str
    outcome: str  # one of OUTCOMES
    empty_kernels: tuple[str, ...]
    message: str
    seconds: float
    trap_kernels: tuple[str, ...] = ()
    kernels: int = 0  # entries found in the PTX
    cached: bool = False
    # Every kernel with a body, and how many trap instructions it holds: a library that lacks an
    # instruction on this target often compiles a message and a trap in its place (CuTe's MMA atoms
    # do), so such a kernel builds with a body and fails when it runs. None: not measured.
    trap_sites: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True)
class ProbeOptions:
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()  # 'NAME' or 'NAME=VALUE'
    std: str = "c++17"
    timeout_s: float = 180.0
    extra_flags: tuple[str, ...] = ()
    nvcc: str | None = None  # default: find_nvcc()
    use_cache: bool = True
    cache_dir: str | None = None  # default: default_cache_dir()
    baseline_target: str | None = None  # a target the gate admits, to tell arch errors from broken builds
    jobs: int = 4


# ---------------------------------------------------------------- locating tools and the cache


# ---------------------------------------------------------------- reading PTX

_ENTRY_RE = re.compile(r"\.entry\s+([\w$.]+)\s*\((.*?)\)\s*(?:\.[\w.]+[^{]*)?\{", re.S)
_LINE_COMMENT_RE = re.compile(r"//[^\n]*")
_BLOCK_COMMENT_RE = re.compile(r"/\*.*?\*/", re.S)


def ptx_entries(ptx: str) -> dict[str, str]:
    """Kernel name → body text (between the entry's braces) for every `.entry` in a PTX module."""
    text = _BLOCK_COMMENT_RE.sub("", _LINE_COMMENT_RE.sub("", ptx))
    entries: dict[str, str] = {}
    for match in _ENTRY_RE.finditer(text):
        depth, start = 1, match.end()
        pos = start
        while pos < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[pos], 0)
            pos += 1
        entries[match.group(1)] = text[start : pos - 1]
    return entries


def body_kind(body: str) -> str:
    """'empty' (only `ret;`), 'trap' (traps, and writes nothing outside the thread on the way: a kernel
    that only prints a message, or fails an `assert`, and traps is a trap) or 'code'."""
    return read_body(body)[0]


_TRAP_OPS = ("trap", "brkpt")


def read_body(body: str) -> tuple[str, int]:
    """A kernel's PTX body read once: its kind (see body_kind) and how many trap instructions it holds."""
    statements = _statements(body)
    ops = [_opcode(statement) for statement in statements]
    traps = sum(op in _TRAP_OPS for op in ops)
    if all(op in ("ret", "exit") for op in ops):
        return "empty", traps
    if traps and not any(_writes_outside_thread(s) for s in statements):
        return "trap", traps
    return "code", traps


def _statements(body: str) -> list[str]:
    statements = []
    body = _BLOCK_COMMENT_RE.sub("", _LINE_COMMENT_RE.sub("", body))
    for raw in body.replace("{", ";").replace("}", ";").split(";"):
        statement = re.sub(r"^(?:[\w$]+:\s*)+", "", raw.strip()).strip()  # labels
        if statement and not statement.startswith("."):  # .reg/.local/.pragma/.loc: declarations
            statements.append(statement)
    return statements


def arch_traps(result: ProbeResult, admitted: ProbeResult) -> tuple[str, ...]:
    """Kernels that trap more often here than in a build for an admitted target that has them: the
    traps stand where that build has instructions."""
    if result.trap_sites is None or admitted.trap_sites is None or not admitted.outcome.startswith("built"):
        return ()
    before = {kernel_key(name): count for name, count in admitted.trap_sites}
    return tuple(name for name, count in result.trap_sites if count > before.get(kernel_key(name), count))


def unmatched_traps(result: ProbeResult, admitted: list[ProbeResult]) -> tuple[str, ...]:
    """Kernels with traps here that no admitted build names the same way (an instance only this target
    compiles, or a name one demangler could not read): their traps cannot be compared."""
    known = {kernel_key(name) for build in admitted for name, _ in build.trap_sites or ()}
    return tuple(name for name, count in result.trap_sites or () if count and kernel_key(name) not in known)


_CAST_LITERAL_RE = re.compile(r"\((?:bool|char|signed char|unsigned char|short|unsigned short|int|unsigned int|long|"
                              r"unsigned long|long long|unsigned long long)\)(-?\d+)")


def kernel_key(name: str) -> str:
    """A demangled kernel name as cu++filt and c++filt both spell it: `(bool)1` / `true`, `(int)128` /
    `128`, `> >` / `>>`, and the parameter list (`(T1::Params)` / spelled out) left out."""
    name = _CAST_LITERAL_RE.sub(lambda m: {"(bool)1": "true", "(bool)0": "false"}.get(m.group(0), m.group(1)), name)
    depth = 0
    for index, char in enumerate(name):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0 and index:
            name = name[:index]
            break
    return name.replace(" ", "")


def _opcode(statement: str) -> str:
    """The instruction of a PTX statement, past a guard predicate (`@%p1 st.global.u32 ...`)."""
    words = statement.split()
    return words[1] if words[0].startswith("@") and len(words) > 1 else words[0]


# Calls that only report: `printf`, and the failed `assert` (CuTe's CUTE_INVALID_CONTROL_PATH is
# `assert(0 && msg); printf(msg); __brkpt()` where NDEBUG is not defined).
_REPORTING_CALLS = ("vprintf", "__assertfail")
# Instructions that can leave a result where another thread or the host sees it.
_WRITING_OPS = ("st", "atom", "red", "cp", "multimem", "tcgen05", "wgmma", "mma", "wmma", "tensormap", "mbarrier")


def _writes_outside_thread(statement: str) -> bool:
    op = _opcode(statement)
    if op.startswith("call"):  # `call.uni (retval0), vprintf, (param0, param1)`
        words = statement.split(op, 1)[1].split()
        callee = next((word.strip(",") for word in words if not word.startswith("(")), "")
        return callee not in _REPORTING_CALLS
    if op.startswith("st.") and (".local" in op or ".param" in op):
        return False
    return op.split(".")[0].startswith(_WRITING_OPS)


@lru_cache(maxsize=1)
def _demangler() -> str | None:
    return shutil.which("cu++filt") or shutil.which("c++filt")


def demangle(names: list[str]) -> list[str]:
    tool = _demangler()
    if not tool or not names:
        return names
    try:
        out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return names
    lines = out.stdout.splitlines()
    return lines if out.returncode == 0 and len(lines) == len(names) else names


# ---------------------------------------------------------------- classifying failures

_MISSING_HEADER_RES = (
    re.compile(r"fatal error: ([^:\s]+): No such file or directory"),
    re.compile(r'cannot open source file "([^"]+)"'),
)
_ERROR_DIRECTIVE_RE = re.compile(r"#error(?: directive)?:?\s*(.*)")
_TOOLKIT_WORDS = re.compile(r"CUDA|toolkit|nvcc|version|CUDART|__CUDACC_VER", re.I)
_ARCH_WORDS = re.compile(r"\bsm_?\d|__CUDA_ARCH|architecture|compute capability|\barch\b|hopper|blackwell", re.I)
_FRONTEND_ARCH_RE = re.compile(
    r"not supported (?:for|on) this (?:GPU )?architecture|requires \.target|requires compute capability|"
    r"not supported on \.target|cannot be compiled for architecture",
    re.I,
)
_UNKNOWN_TARGET_RE = re.compile(r"Unsupported gpu architecture|Value '[^']*' is not defined for option", re.I)
_PTXAS_PREFIX_RE = re.compile(r"^ptxas\s+\S+?, line (\d+); (error|warning)\s*:\s*")


def first_error_line(stderr: str, scratch: str = "") -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if re.search(r"\berror\b|fatal", line, re.I):
            return _clean(line, scratch)
    return _clean(lines[0], scratch) if lines else "no diagnostics"


def _clean(line: str, scratch: str) -> str:
    line = _PTXAS_PREFIX_RE.sub(r"ptxas \2 (PTX line \1): ", line)
    return line.replace(scratch.rstrip("/") + "/", "") if scratch else line


def classify_failure(stderr: str, scratch: str = "") -> tuple[str, str]:
    """(outcome, message) for a failed compile: 'arch-error' or 'inconclusive'."""
    for pattern in _MISSING_HEADER_RES:
        match = pattern.search(stderr)
        if match:
            return "inconclusive", f"missing header {match.group(1)} (add its include folder with -I)"
    if _UNKNOWN_TARGET_RE.search(stderr):
        return "inconclusive", f"this nvcc cannot build the target: {first_error_line(stderr, scratch)}"
    directive = _ERROR_DIRECTIVE_RE.search(stderr)
    if directive:
        text = directive.group(1).strip()
        if _ARCH_WORDS.search(text):
            return "arch-error", f"#error for this architecture: {text}"
        why = "about the toolkit" if _TOOLKIT_WORDS.search(text) else "not about the architecture"
        return "inconclusive", f"#error {why}: {text}"
    ptxas = [line for line in stderr.splitlines() if line.startswith("ptxas") and re.search(r"error", line, re.I)]
    if ptxas:
        return "arch-error", _clean(ptxas[0].strip(), scratch)
    if _FRONTEND_ARCH_RE.search(stderr):
        line = next(ln for ln in stderr.splitlines() if _FRONTEND_ARCH_RE.search(ln))
        return "arch-error", _clean(line.strip(), scratch)
    return "inconclusive", f"compile error not tied to the target: {first_error_line(stderr, scratch)}"


# ---------------------------------------------------------------- compiling


def nvcc_command(nvcc: str, source: Path, target: str, options: ProbeOptions, scratch: Path) -> list[str]:
    command = [nvcc, "-cubin", f"-arch={target}", f"-std={options.std}", "--keep", f"--keep-dir={scratch}"]
    command += ["-MD", "-MF", str(scratch / "deps.d"), "-o", str(scratch / "unit.cubin")]
    command += [f"-I{folder}" for folder in options.include_dirs]
    command += [f"-D{define}" for define in options.defines]
    command += list(options.extra_flags)
    return command + [str(source)]


def _source_for(unit: Path, scratch: Path) -> Path:
    """A translation unit for `unit`: itself, or a one-line wrapper that includes a header."""
    if unit.suffix.lower() in TU_SUFFIXES:
        return unit
    wrapper = scratch / "archlint_probe_unit.cu"
    wrapper.write_text(f'#include "{unit.as_posix()}"\n', encoding="utf-8")
    return wrapper


def compile_unit(unit: Path, target: str, options: ProbeOptions, nvcc: str) -> tuple[ProbeResult, list[str]]:
    """Compile once, uncached. Returns the result and the files the compile read."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="archlint-probe-", ignore_cleanup_errors=True) as tmp:
        scratch = Path(tmp)
        source = _source_for(unit, scratch)
        command = nvcc_command(nvcc, source, target, options, scratch)
        try:
            done = _run_nvcc(command, scratch, options.timeout_s)
        except subprocess.TimeoutExpired:
            return _result(unit, target, "inconclusive", f"nvcc timed out after {options.timeout_s:g} s", started), []
        except OSError as exc:
            return _result(unit, target, "inconclusive", f"nvcc could not run: {exc}", started), []
        deps = _read_deps(scratch / "deps.d")
        if done.returncode != 0:
            outcome, message = classify_failure(done.stderr + done.stdout, str(scratch))
            return _result(unit, target, outcome, message, started), deps
        ptx_files = sorted(scratch.glob("*.ptx"))
        ptx = "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in ptx_files)
    return _built(unit, target, ptx, started), deps


def _run_nvcc(command: list[str], scratch: Path, timeout_s: float) -> subprocess.CompletedProcess:
    """nvcc in a process group of its own, so that a timeout also stops the cicc/ptxas it started
    (left running, they keep writing into the scratch folder). TMPDIR keeps nvcc's intermediate
    files in that folder, which is removed after."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=scratch,
                               env={**os.environ, "TMPDIR": str(scratch)}, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _built(unit: Path, target: str, ptx: str, started: float) -> ProbeResult:
    read = {name: read_body(body) for name, body in ptx_entries(ptx).items()}
    kinds = {name: kind for name, (kind, _) in read.items()}
    empty = sorted(name for name, kind in kinds.items() if kind == "empty")
    trap = sorted(name for name, kind in kinds.items() if kind == "trap")
    coded = sorted(name for name, kind in kinds.items() if kind == "code")
    empty_names, trap_names, coded_names = demangle(empty), demangle(trap), demangle(coded)
    if empty:
        outcome, message = "built-empty", f"{len(empty)} of {len(kinds)} kernels compile to an empty body: " + ", ".join(empty_names)
    elif trap:
        outcome, message = "built-trap", f"{len(trap)} of {len(kinds)} kernels only trap: " + ", ".join(trap_names)
    else:
        outcome, message = "built", f"built; {len(kinds)} kernel{'s' if len(kinds) != 1 else ''}, none empty"
    return replace(
        _result(unit, target, outcome, message, started),
        empty_kernels=tuple(empty_names),
        trap_kernels=tuple(trap_names),
        kernels=len(kinds),
        trap_sites=tuple((name, read[raw][1]) for name, raw in zip(coded_names, coded)),
    )


def _result(unit: Path, target: str, outcome: str, message: str, started: float) -> ProbeResult:
    return ProbeResult(str(unit), target, outcome, (), message, round(time.monotonic() - started, 3))


# Toolkit and compiler headers are covered by the nvcc version in the key; everything else is stamped.
_SYSTEM_DEP_RE = re.compile(r"^/usr/include/|^/usr/lib/gcc/|/cuda[^/]*/(?:targets|include)/")


def _read_deps(path: Path) -> list[str]:
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8", errors="replace").replace("\\\n", " ")
    _, _, tail = text.partition(":")
    return sorted({dep for dep in tail.split() if dep and not _SYSTEM_DEP_RE.search(os.path.normpath(dep))})


# ---------------------------------------------------------------- the cache


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cache_key(unit: Path, target: str, options: ProbeOptions, nvcc: str) -> str:
    material = {
        "v": CACHE_VERSION,
        "unit": str(unit),
        "content": _file_hash(unit),
        "target": target,
        "flags": [options.std, list(options.include_dirs), list(options.defines), list(options.extra_flags)],
        "nvcc": nvcc_version(nvcc),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _stamp(path: str) -> list:
    try:
        info = os.stat(path)
        return [path, info.st_mtime_ns, info.st_size]
    except OSError:
        return [path, None, None]


def cache_load(directory: Path, key: str) -> ProbeResult | None:
    entry = directory / f"{key}.json"
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if any(_stamp(stamp[0]) != stamp for stamp in data.get("deps", [])):
        return None  # a header changed since
    fields = data["result"]
    fields["empty_kernels"] = tuple(fields["empty_kernels"])
    fields["trap_kernels"] = tuple(fields["trap_kernels"])
    if fields.get("trap_sites") is not None:
        fields["trap_sites"] = tuple((name, count) for name, count in fields["trap_sites"])
    return replace(ProbeResult(**fields), cached=True)


def cache_store(directory: Path, key: str, result: ProbeResult, deps: list[str]) -> None:
    if result.message.startswith("nvcc timed out"):
        return  # a slow machine today says nothing about tomorrow
    try:
        directory.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({"result": asdict(result), "deps": [_stamp(dep) for dep in deps]}, sort_keys=True)
        with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, suffix=".tmp", encoding="utf-8") as out:
            out.write(payload)
        os.replace(out.name, directory / f"{key}.json")
    except OSError:
        pass  # a read-only home must not fail the probe


# ---------------------------------------------------------------- public entry points


def probe_unit(unit: str | os.PathLike, target: str, options: ProbeOptions = ProbeOptions()) -> ProbeResult:
    """Build one unit for one target and say what came out."""
    path = Path(unit).resolve()
    nvcc = options.nvcc or find_nvcc()
    if not nvcc:
        return ProbeResult(str(path), target, "inconclusive", (), "nvcc not found (set CUDA_HOME or PATH)", 0.0)
    if not path.is_file():
        return ProbeResult(str(path), target, "inconclusive", (), "unit not found", 0.0)
    directory = Path(options.cache_dir) if options.cache_dir else default_cache_dir()
    key = cache_key(path, target, options, nvcc) if options.use_cache else ""
    cached = cache_load(directory, key) if key else None
    if cached is not None and not (cached.outcome == "built" and cached.trap_sites is None):
        return cached  # (a build stored before traps were counted is done again)
    result, deps = compile_unit(path, target, options, nvcc)
    result = _check_against_baseline(path, result, options, nvcc)
    if key:
        cache_store(directory, key, result, deps + [str(path)])
    return result


def _check_against_baseline(path: Path, result: ProbeResult, options: ProbeOptions, nvcc: str) -> ProbeResult:
    """An unexplained error is about the target only if the unit builds for a target the gate admits;
    traps in a kernel with a body are about the target only if that build has fewer."""
    if not options.baseline_target:
        return result
    if result.outcome == "built" and any(count for _, count in result.trap_sites or ()):
        base, _ = compile_unit(path, options.baseline_target, options, nvcc)
        odd = arch_traps(result, base)
        unmatched = unmatched_traps(result, [base])
        if not odd and unmatched:
            return replace(result, outcome="inconclusive", message=f"{len(unmatched)} kernel(s) trap and the "
                           f"{options.baseline_target} build has none of that name to compare with: " + ", ".join(unmatched[:3]))
        if not odd:
            return result
        return replace(result, outcome="built-trap", message=f"{len(odd)} of {result.kernels} kernels trap where the "
                       f"{options.baseline_target} build has instructions: " + ", ".join(odd))
    if result.outcome != "inconclusive" or "not tied to the target" not in result.message:
        return result
    base, _ = compile_unit(path, options.baseline_target, options, nvcc)
    if base.outcome.startswith("built"):
        detail = result.message.split(": ", 1)[-1]
        return replace(result, outcome="arch-error", message=f"builds for {options.baseline_target}, not for {result.target}: {detail}")
    return replace(result, message=f"{result.message} (fails for {options.baseline_target} too)")


def probe_units(units, target: str, options: ProbeOptions = ProbeOptions()) -> list[ProbeResult]:
    """Probe several units in parallel; results in the order of `units`."""
    units = list(units)
    if len(units) <= 1 or options.jobs <= 1:
        return [probe_unit(unit, target, options) for unit in units]
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        return list(pool.map(lambda unit: probe_unit(unit, target, options), units))


def format_probe(result: ProbeResult, root: str = "") -> str:
    unit = os.path.relpath(result.unit, root) if root else result.unit
    cached = ", cached" if result.cached else ""
    return f"{unit} [{result.target}]: {result.outcome} — {result.message} ({result.seconds:.2f} s{cached})"
