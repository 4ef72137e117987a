"""Sources named the ways newer JIT code names them (fixtures/gate-module-sources): a folder beside
the module (`Path(__file__).resolve().parent / "csrc"`), a comprehension over a module constant
(`[csrc / name for name in DEVICE_SOURCES]`, `*(CSRC / path for path in GENERATED_SOURCES)`), a
folder a function returns (`csrc = _csrc_dir()`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.extract.python.facts import extract_python
from archlint.model.scan import ScanOptions

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "gate-module-sources"
CSRC = "fi/data/csrc"


@pytest.fixture(scope="module")
def gates():
    result = scan(ScanOptions(paths=(str(ROOT),), use_cache=False, jobs=1))
    return {report.location.path.rpartition("/")[2].removesuffix(".py") + ":" + str(report.location.line): report
            for report in result.gates}


def _verdicts(gate):
    return {v.target: v for v in gate.verdicts}


def test_device_sources_named_by_a_comprehension_over_a_module_constant_are_judged(gates):
    # The binding only declares the programs; before, its sources were that binding alone and every
    # excluded target was UNKNOWN ("no kernel ... a -D flag it cannot read may select them").
    gate = gates["router_gemm:35"]
    programs = {f"{CSRC}/router_gemm/router_gemm_m{m}_k{k}_device.cu" for m in (1, 2) for k in (6144, 7168)}
    assert programs <= set(gate.sources)
    verdicts = _verdicts(gate)
    genuine = verdicts["sm_89"]
    assert genuine.verdict.value == "GENUINE" and "`griddepcontrol.wait`" in genuine.reason
    assert genuine.evidence[-1].location.path in programs
    policy = verdicts["sm_120a"]
    assert policy.verdict.value == "POLICY"
    assert policy.reason == "nothing reachable from 5 guarded source(s) needs what sm_120a lacks"
    assert programs <= set(policy.reached.units)


def test_the_folder_a_function_returns_is_the_one_the_scan_holds(gates):
    # `_csrc_dir()` returns the packaged folder, else a source checkout outside the wheel.
    gate = gates["router_gemm:35"]
    assert f"{CSRC}/router_gemm/router_gemm.cu" in gate.sources
    assert all("could not be resolved" not in v.reason for v in gate.verdicts)


def test_the_folder_a_function_returns_through_a_loop_over_candidates_is_the_one_the_scan_holds(gates):
    # `for root in (CSRC, checkout): if (root / "sparse_select").exists(): return root`
    gate = gates["sparse_select:23"]
    assert gate.sources == (f"{CSRC}/sparse_select/topk_select.cu",)
    assert {v.verdict.value for v in gate.verdicts} == {"POLICY"}
    assert _verdicts(gate)["sm_120a"].reached is not None


def test_generated_sources_spliced_from_a_module_constant_are_judged(gates):
    gate = gates["dcp_alltoall:16"]
    generated = {f"{CSRC}/generated/dcp/dcp_alltoall_335c14a7_kernel.cu", f"{CSRC}/generated/dcp/dcp_alltoall_baedc535_kernel.cu"}
    assert generated <= set(gate.sources)
    verdict = _verdicts(gate)["sm_80"]
    assert verdict.verdict.value == "GENUINE" and verdict.reason.startswith("`__cluster_dims__` in `kernel_dcp_alltoall_")
    assert verdict.evidence[-1].location.path in generated


def test_sources_beside_the_module(gates):
    folder = "fi/experimental/rope_sm90/csrc"
    spliced = gates["jit:13"]  # `[_CSRC / name for name in _SOURCES]`, `_CSRC` beside the module
    assert set(spliced.sources) == {f"{folder}/rope_sm90.cu", f"{folder}/rope_sm90_binding.cu"}
    verdicts = _verdicts(spliced)
    assert verdicts["sm_80"].verdict.value == "GENUINE" and "`mbarrier.arrive.expect_tx" in verdicts["sm_80"].reason
    assert verdicts["sm_120a"].verdict.value == "POLICY"
    rooted = gates["jit:21"]  # a local `root` bound to the module's folder, joined later
    assert set(rooted.sources) == {f"{folder}/rope_quant.cu", f"{folder}/rope_sm90_binding.cu"}
    assert _verdicts(rooted)["sm_80"].verdict.value == "GENUINE"
    assert _verdicts(rooted)["sm_89"].verdict.value == "POLICY"


def test_a_record_chosen_at_run_time_from_a_module_table_builds_every_record_s_sources(gates):
    # `[root / source for source in record["sources"]]` with `record = MODULES[module] if module in
    # MODULES else FROZEN[module]`: any record of either table
    gate = gates["jit:46"]
    folder = "fi/experimental/gqa_decode/csrc"
    assert set(gate.sources) == {f"{folder}/sm_110a/gqa_decode_short_kernel.cu", f"{folder}/sm_110a/gqa_decode_binding.cu",
                                 f"{folder}/prepared/gqa_decode_n32_b4_direct.cu", f"{folder}/sm_110a/gqa_decode_long_kernel.cu"}
    verdicts = _verdicts(gate)
    assert verdicts["sm_89"].verdict.value == "GENUINE"
    assert verdicts["sm_89"].evidence[-1].location.path == f"{folder}/prepared/gqa_decode_n32_b4_direct.cu"
    assert verdicts["sm_120a"].reason == "nothing reachable from 4 guarded source(s) needs what sm_120a lacks"
    # the catalogs the same function joins to its folder are no sources
    assert all("could not be resolved" not in v.reason for v in gate.verdicts)


def test_names_read_at_run_time_from_a_manifest_leave_the_sources_unresolved(gates):
    gate = gates["jit:59"]
    assert gate.sources == ()
    assert {v.reason for v in gate.verdicts} == {"guarded sources could not be resolved (unresolved: root / name)"}


def test_a_comprehension_over_names_is_one_reference_to_each_element():
    facts = extract_python("fi/jit/x.py", b"""
NAMES = ("a.cu", "b.cu")
def gen(csrc, items):
    spliced = [csrc / "sub" / name for name in NAMES]
    attributes = [item.path for item in items]
    filtered = [csrc / name for name in NAMES if name]
""")
    each = [ref for ref in facts.sources if ref.each is not None]
    assert [(ref.function, ref.root, ref.parts, ref.each.text) for ref in each] == [("gen", "csrc", ("sub", "{name}"), "NAMES")]


def test_a_formatted_name_passed_to_a_helper_is_each_file_of_the_folder_the_helper_joins_it_to(gates):
    # `_kda_source(csrc_dir, f"kda_fused_{variant}_binding.cu")` returns `csrc_dir / name` (through a
    # local `path`): the unit is every scanned file of that folder the name can spell, one per variant.
    gate = gates["fused_kda:27"]
    assert set(gate.sources) == {f"{CSRC}/kda/kda_fused_m64_binding.cu", f"{CSRC}/kda/kda_fused_m128_binding.cu"}
    policy = _verdicts(gate)["sm_120a"]
    assert policy.verdict.value == "POLICY"
    assert set(policy.reached.units) == set(gate.sources)
