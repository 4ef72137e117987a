"""A gate in front of a JIT spec whose source archlint cannot read (fixtures/gate-pinned-specs, in the
shape of FlashInfer 0.7's generated FlashKDA modules: the selector translation unit is text rendered
from a JSON manifest read at run time) is judged by the builds the spec makes: its flags are the
entry of a dict of pinned flag lists keyed at run time (`*_NVCC_FLAGS[module.target]`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.gates.pins import build_codes
from archlint.knowledge.idioms import load_idioms
from archlint.model.scan import ScanOptions

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "gate-pinned-specs"
JIT = "fi/jit/flash_kda.py"


@pytest.fixture(scope="module")
def gates():
    result = scan(ScanOptions(paths=(str(ROOT),), targets=("sm_90a", "sm_110a", "sm_120a", "sm_121a"),
                              use_cache=False, jobs=1))
    return {report.function: report for report in result.gates}


def _verdicts(gate):
    return {v.target: v for v in gate.verdicts}


def test_a_unit_built_only_for_targets_that_cannot_run_the_excluded_one_is_genuine(gates):
    # Before, every excluded target was UNKNOWN: "some guarded sources could not be resolved:
    # jit_env.FLASHINFER_GEN_SRC_DIR / uri / f"{module.module_ident}_binding.cu"".
    verdicts = _verdicts(gates["recurrent_kda"])
    for target in ("sm_90a", "sm_110a", "sm_120a", "sm_121a"):
        verdict = verdicts[target]
        assert verdict.verdict.value == "GENUINE", target
        assert verdict.reason == (f"`gen_flash_kda_generated_module` is built for sm_100a, sm_103a only ({JIT}:98): "
                                  f"none runs on {target} (rules/kb/targets.toml)")
        assert "_binding.cu" not in verdict.reason
        last = verdict.evidence[-1]
        assert (last.location.path, last.location.line) == (JIT, 98)
        assert verdict.evidence[0].location.path == "fi/kda.py"


def test_every_entry_of_a_dict_keyed_at_run_time_is_a_build_and_a_family_build_runs_on_its_family(gates):
    verdicts = _verdicts(gates["recurrent_kda_family"])
    # sm_100f runs on 10.x only, sm_120f on 12.x only: neither runs on 9.0 or 11.0
    for target in ("sm_90a", "sm_110a"):
        assert verdicts[target].verdict.value == "GENUINE"
        assert "built for sm_100f, sm_120f only" in verdicts[target].reason
    # an sm_120f build runs on 12.0 and 12.1 (sm_120a and sm_121a GPUs): the verdict stays on the source it cannot read
    for target in ("sm_120a", "sm_121a"):
        assert verdicts[target].verdict.value == "UNKNOWN"
        assert "could not be resolved" in verdicts[target].reason


def test_a_dict_entry_not_read_leaves_the_builds_unknown(gates):
    # `{"sm100a": sm100a_nvcc_flags, "sm103a": _tuned_flags("103a")}`: the call may pass any target
    assert {v.verdict.value for v in gates["recurrent_kda_tuned"].verdicts} == {"UNKNOWN"}


def test_build_codes_read_the_code_each_gencode_option_compiles():
    idioms = load_idioms()
    assert build_codes({"-gencode=arch=compute_100a,code=sm_100a", "-DX=1"}, idioms) == ("sm_100a",)
    assert build_codes({"-gencode=arch=compute_90,code=[sm_90,compute_90]"}, idioms) == ("sm_90", "compute_90")
    assert build_codes({"-arch=sm_90"}, idioms) == ("sm_90", "compute_90")
    assert build_codes({"--offload-arch=sm_90a"}, idioms) is None  # a form not read: the builds are not known


def test_a_predicate_in_front_of_a_pinned_spec_names_the_flag_list_to_widen_as_well(gates):
    # `_use_tinygemm_sm100` before a spec built with `sm100a_nvcc_flags + [...sm_103a]`: the kernel
    # needs nothing the targets lack, so both gates are POLICY, and widening the predicate alone
    # would load a module with nothing for the target.
    spec = "fi/jit/tinygemm.py"
    for target in ("sm_90a", "sm_110a", "sm_120a", "sm_121a"):
        verdict = _verdicts(gates["tinygemm_bf16"])[target]
        assert verdict.verdict.value == "POLICY"
        assert verdict.reason == (f"nothing reachable from 1 guarded source(s) needs what {target} lacks; the build pins "
                                  f"targets too: widen the flag list of `gen_tinygemm_sm100_module` ({spec}:10, built for "
                                  "sm_100a, sm_103a only) as well")
        assert (verdict.reached.path[-1].location.path, verdict.reached.path[-1].location.line) == (spec, 10)
        # the spec's own flag gate, at that line, is judged alone
        own = _verdicts(gates["gen_tinygemm_sm100_module"])[target]
        assert own.verdict.value == "POLICY" and "widen the flag list" not in own.reason
    assert gates["gen_tinygemm_sm100_module"].location.line == 10



def test_a_flag_list_the_function_adds_to_is_not_read_from_its_expression_alone(gates):
    # `flags = _GENERATED_NVCC_FLAGS[module.target] + [...]` then `if fast: flags += [...sm_120a]`
    verdicts = _verdicts(gates["recurrent_kda_local"])
    assert {v.verdict.value for v in verdicts.values()} == {"UNKNOWN"}
    assert "could not be resolved" in verdicts["sm_120a"].reason
