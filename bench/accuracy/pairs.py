"""The (gate, excluded target) verdicts of a scan, the translation units each one guards, and the
sample of them the compiler is asked about.

`load_pairs` reads archlint's JSON report; `gate_units` reads the gates' guarded units with archlint's
own Python side (discover, extract, link, judge), so the bench builds what archlint judged; `sample`
draws the stratified sample: round-robin over (verdict, target) strata, cheapest units first.
"""

from __future__ import annotations

import os
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .generated import generated_units
from .projects import FLASHINFER, SGLANG, VLLM_TARGET_DEFINES, Project, sglang_unit

VERDICTS = ("POLICY", "GENUINE", "EMPTY", "UNKNOWN")
# Defines a spec computes from its arguments (f-strings archlint cannot read): one representative
# instance per parameterised unit, from the spec's own code (flashinfer/jit/xqa.py gen_xqa_module_mla,
# DeepSeek MLA: head_dim 576, fp8 KV cache, page size 64, 128 query heads per KV head).
INSTANCE_DEFINES = {
    "csrc/xqa/mla_sm120.cu": ("NDEBUG=1", "BEAM_WIDTH=1", "USE_INPUT_KV=0", "USE_CUSTOM_BARRIER=1",
                              "TOKENS_PER_PAGE=64", "HEAD_ELEMS=576", "CACHE_ELEM_ENUM=2", "HEAD_GRP_SIZE=128",
                              "SLIDING_WINDOW=0", "MLA_WRAPPER=1"),
    # sglang/kernels/kda_kernels/ltx2_qknorm_split_rope_jit.py passes it for its sm_90 source
    "kda_kernels/csrc/diffusion/ltx2_qknorm_split_rope_sm90.cuh": ("KDA_SPLIT_THRESHOLD=1000000000",),
}


# ---------------------------------------------------------------- data


@dataclass(frozen=True)
class Pair:
    """One (gate, excluded target) verdict and what the compiler said about it."""

    release: str
    gate_id: str
    gate_text: str
    target: str  # the build archlint judged (`sm_120a`)
    verdict: str
    reason: str
    evidence: tuple[str, ...] = ()
    units: tuple[str, ...] = ()  # absolute paths of the guarded translation units
    defines: tuple[str, ...] = ()
    references: tuple[str, ...] = ()  # admitted builds, to tell arch-dependent empty kernels from plain ones
    compiler: str = "not-run"
    compiler_detail: str = ""
    unit_outcomes: tuple[tuple[str, str, str], ...] = ()  # (unit, outcome, message)
    project: str = "flashinfer"
    uninstantiated: tuple[str, ...] = ()  # header units built with no template instance: no kernel to judge

    @property
    def key(self) -> str:
        return f"{self.release}:{self.gate_id}:{self.target}"



# ---------------------------------------------------------------- reading the scan


def load_pairs(scan: dict, release: str, targets: tuple[str, ...], units: dict, root: str,
               project: Project = FLASHINFER, workdir: Path | None = None) -> list[Pair]:
    """Every (gate, excluded target) verdict of a scan report for the wanted targets."""
    wanted = set(targets)
    pairs = []
    for gate in scan.get("gates", []):
        info = units.get(gate["id"], {})
        for verdict in gate.get("verdicts", []):
            if verdict["target"] not in wanted and _plain(verdict["target"]) not in {_plain(t) for t in wanted}:
                continue
            evidence = tuple(f"{e['path']}:{e['line']}: {e['message']}" for e in verdict.get("evidence", []))
            sources = tuple(info.get("sources", ()))
            defines = tuple(info.get("defines", ()))
            for suffix, extra in INSTANCE_DEFINES.items():
                if any(u.endswith(suffix) for u in sources):
                    defines = tuple(dict.fromkeys(defines + extra))
            paths = tuple(os.path.join(root, u) for u in sources)
            bare: tuple[str, ...] = ()
            generated = (generated_units(Path(root), gate["id"], gate["text"], workdir)
                         if project is FLASHINFER and workdir is not None else None)
            if generated is not None:
                paths = generated
            if project is SGLANG and workdir is not None:
                built = [sglang_unit(path, workdir) for path in paths]
                paths, bare = tuple(b[0] for b in built), tuple(b[0] for b in built if not b[1])
            pairs.append(Pair(
                release=release, gate_id=gate["id"], gate_text=gate["text"], target=verdict["target"],
                verdict=verdict["verdict"], reason=verdict["reason"], evidence=evidence, units=paths,
                defines=defines,
                references=tuple(info.get("references", ())), project=project.name, uninstantiated=bare,
            ))
    return pairs


def _arch_specific(target: str) -> str:
    """FlashInfer builds its admitted 9.x-12.x targets arch-specific (`sm_100a`)."""
    if target[-1].isdigit() and int(target[3:]) >= 90:
        return target + "a"
    return target


def _plain(target: str) -> str:
    return target.rstrip("af")


def gate_units(paths: list[str], targets: tuple[str, ...], sources_kinds=(".cu", ".cpp", ".cc")) -> tuple[str, dict]:
    """{gate id: {sources, defines, reference}} from archlint's own reading of the Python side."""
    from archlint.discover import discover
    from archlint.extract.files import extract_all
    from archlint.gates.detect import find_gates
    from archlint.gates.units import guarded_units
    from archlint.knowledge.arch import parse_target
    from archlint.link.python import link_python

    found = discover(tuple(paths))
    python_files = [f for f in found.files if f.language == "python"]
    facts = extract_all(python_files, 1, 4 * 1024 * 1024, None)
    pyindex = link_python([f.python for f in facts if f.python is not None], [found.root],
                          {f.path for f in found.files})
    parsed = tuple(parse_target(t) for t in targets)
    out = {}
    for gate in find_gates(pyindex):
        gate_id = f"{gate.path}:{gate.line}:{gate.col}"
        units = guarded_units(pyindex, gate)
        admitted = sorted(t.cc for t in parsed if t.cc in set(gate.admits))
        out[gate_id] = {
            "sources": [s for s in units.sources if s.endswith(sources_kinds)],
            "defines": [d[2:] if d.startswith("-D") else d for d in getattr(gate, "defines", ())],
            "references": [_arch_specific(f"sm_{cc}") for cc in admitted],
        }
    return found.root, out


_BLOCK_DEFINE_RE = re.compile(r"-D(\w+(?:=\w+)?)")


def build_list_units(scan: dict, root: str) -> dict:
    """{gate id: {sources, defines, references}} for a CMake project, from the scan report itself: a
    build list's compiled sources, the -D flags its block adds (named in the evidence) and the targets it
    admits."""
    out = {}
    for gate in scan.get("gates", []):
        defines: list[str] = []
        for verdict in gate.get("verdicts", []):
            for item in verdict.get("evidence", []):
                if item.get("path", "").endswith(("CMakeLists.txt", ".cmake")):
                    defines += _BLOCK_DEFINE_RE.findall(item.get("message", ""))
        sources = [s for s in gate.get("sources", []) if s.endswith((".cu", ".cpp", ".cc"))
                   and os.path.isfile(os.path.join(root, s))]
        for folder, extra in VLLM_TARGET_DEFINES:
            if any(s.startswith(folder) for s in sources):
                defines += extra
        out[gate["id"]] = {
            "sources": sources,
            "defines": list(dict.fromkeys(defines)),
            "references": list(gate.get("admits", [])),
        }
    return out


# ---------------------------------------------------------------- sampling


def unit_cost(path: str, cache: dict) -> int:
    """A cheap proxy for compile time: bytes of the unit plus its local includes, one level deep."""
    if path in cache:
        return cache[path]
    cost = 0
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        cost = len(text)
        cost += 20000 * text.count("cutlass") + 200000 * text.count("#include \"cutlass") + 200000 * text.count("#include <cutlass")
    except OSError:
        cost = 10 ** 9
    cache[path] = cost
    return cost


def sample(pairs: list[Pair], size: int, seed: int = 0, max_units: int = 3, max_cost: int = 5_000_000) -> list[Pair]:
    """A stratified sample: round-robin over (verdict, target) strata, cheapest pairs first,
    so every verdict kind and target is represented; a (unit, target) build shared with an
    already chosen pair costs nothing and is preferred."""
    rng = random.Random(seed)
    costs: dict[str, int] = {}
    usable = [p for p in pairs if p.units and len(p.units) <= max_units]
    strata: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for pair in usable:
        strata[(pair.verdict, _plain(pair.target))].append(pair)
    for members in strata.values():
        rng.shuffle(members)
        members.sort(key=lambda p: sum(unit_cost(u, costs) for u in p.units))
    chosen: list[Pair] = []
    builds: set[tuple[str, str]] = set()
    order = sorted(strata, key=lambda k: (VERDICTS.index(k[0]) if k[0] in VERDICTS else 9, k[1]))
    # Rarer verdicts first in each round so that they are always in.
    order.sort(key=lambda k: sum(len(v) for (vk, _), v in strata.items() if vk == k[0]))
    while len(chosen) < size and any(strata[k] for k in order):
        for key in order:
            members = strata[key]
            if not members or len(chosen) >= size:
                continue
            # prefer a pair whose builds are already planned
            best = min(range(len(members)), key=lambda i: (
                sum(unit_cost(u, costs) for u in members[i].units if (u, members[i].target) not in builds), i))
            pair = members.pop(best)
            if sum(unit_cost(u, costs) for u in pair.units) > max_cost:
                continue
            chosen.append(pair)
            builds.update((u, pair.target) for u in pair.units)
    return chosen

