"""What a CUDA file read for its directives only says the file rules could find in it
(extract.cuda.screen): never less than its full facts give them, and the faster searches it shares
with the full extraction find what the patterns they replace found."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from archlint.extract.cuda.facts import extract_cuda, extract_cuda_directives
from archlint.extract.cuda.screen import asm_statements
from archlint.extract.cuda.smem import smem_requests
from archlint.checks.context import reference_targets
from archlint.judge.analysis import HitKind, Judging, empty_kernel, emits_instruction
from archlint.knowledge.arch import Target, known_ccs
from archlint.knowledge.kb import load_kb
from archlint.knowledge.languages import CUDA_SUFFIXES
from archlint.lang.cpp.directives import scan_directives
from archlint.link.cuda import build_index

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SOURCES = sorted(p for p in FIXTURES.rglob("*") if p.suffix in CUDA_SUFFIXES and p.is_file())
ASM_PATTERN = re.compile(rb"\b(?:asm|__asm__)\s*(?:volatile|__volatile__)?\s*(?:goto\s*)?\(")  # as extract_cuda had it
STATIC_PATTERN = re.compile(
    rb"(?<!extern)\s__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_][\w:]*(?:\s*<[^;{}<>]*>)?)\s+"
    rb"(?:__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_]\w*)\s*((?:\[[^\]\n;]+\]\s*)+);"
)
EDGES = b"""x__asm__("mov.u32 %0, 1;");
__asm("nop;"); _asm("nop;"); asm volatile ("wgmma.fence.sync.aligned;");
__asm__ __volatile__("griddepcontrol.wait;");
extern __shared__ float dynamic_a[];
extern  __shared__ float two_spaces[64];
\t__shared__ float tiles[64][64];
;__shared__ float no_space[8];
__shared__ float at_start[8];
"""


def _lacking_somewhere(kind: str, name: str) -> bool:
    requirement = load_kb().requirement(kind, name)
    return requirement is not None and not all(requirement.supports(Target(cc, "")) for cc in known_ccs())


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_the_directives_read_never_holds_less_than_the_full_facts(path):
    data = path.read_bytes()
    full = extract_cuda(path.name, data)
    sites = extract_cuda_directives(path.name, data).rule_sites
    assert sites is not None
    emitting = {(c.kind, c.name, c.region) for c in full.constructs
                if emits_instruction(c) and _lacking_somewhere(c.kind, c.name)}
    assert emitting <= set(sites.constructs)
    assert {(r.kind, r.nbytes, r.region) for r in full.smem if r.nbytes is not None} == \
        {(r.kind, r.nbytes, r.region) for r in sites.smem}
    # a kernel empty on a target has a first line of code compiled out there
    judging = Judging(build_index([full], (), {}), load_kb())
    for target in reference_targets():
        view = judging.view(target)
        for kernel in (f for f in full.functions if f.kind == "global"):
            hit = empty_kernel(view, full, kernel)
            if hit is not None and hit.kind is HitKind.EMPTY_KERNEL:
                assert sites.unread_kernels or any(view.truth(full.path, region) == 0 for region in sites.kernels)


@pytest.mark.parametrize("data", [EDGES, *(p.read_bytes() for p in SOURCES)], ids=["edges", *(p.name for p in SOURCES)])
def test_asm_statements_and_static_requests_are_found_where_the_patterns_found_them(data):
    masked = scan_directives("x.cu", data).masked
    assert [(m.start(), m.end()) for m in asm_statements(masked)] == [(m.start(), m.end()) for m in ASM_PATTERN.finditer(masked)]
    statics = [r for r in smem_requests(scan_directives("x.cu", data), lambda line: "") if r.kind == "static"]
    assert [(r.line, r.col) for r in statics] == [_line_col(masked, m.start(2)) for m in STATIC_PATTERN.finditer(masked)]


def test_the_edges_read_as_expected():
    masked = scan_directives("x.cu", EDGES).masked
    assert [masked[m.start():m.end()].split(b"(")[0].strip() for m in asm_statements(masked)] == [
        b"asm volatile", b"__asm__ __volatile__"]
    statics = [r.text for r in smem_requests(scan_directives("x.cu", EDGES), lambda line: "") if r.kind == "static"]
    assert statics == ["float two_spaces[64]", "float tiles[64][64]", "float at_start[8]"]


def _line_col(data: bytes, offset: int) -> tuple[int, int]:
    return data.count(b"\n", 0, offset) + 1, offset - (data.rfind(b"\n", 0, offset) + 1) + 1
