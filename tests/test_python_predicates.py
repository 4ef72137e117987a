"""Capability predicates beyond FlashInfer's idioms (fixtures/gate-python-predicates): SGLang's
partial-bound and lru_cache'd predicates and its platform attribute table, vLLM's platform
predicates, DeviceCapability values and backend capability methods; and a flash-attn-shaped
setup.py whose CUDA target list is judged over its own branch's sources (fixtures/gate-setup-py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archlint.engine import scan
from archlint.extract.python.facts import extract_python
from archlint.gates.detect import find_gates
from archlint.knowledge.arch import known_ccs
from archlint.knowledge.idioms import IdiomsError, read_idioms
from archlint.link.python import link_python
from archlint.model.scan import ScanOptions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PREDICATES = FIXTURES / "gate-python-predicates"
SETUP = FIXTURES / "gate-setup-py"
TMEM = "sg/srt/layers/attention/tmem_backend.py"
FP8 = "vl/model_executor/layers/fp8.py"


@pytest.fixture(scope="module")
def result():
    return scan(ScanOptions(paths=(str(PREDICATES),), targets=("sm_120a",), use_cache=False, jobs=1))


@pytest.fixture(scope="module")
def gates():
    paths = sorted(p.relative_to(PREDICATES).as_posix() for p in PREDICATES.rglob("*.py"))
    facts = [extract_python(path, (PREDICATES / path).read_bytes()) for path in paths]
    found = find_gates(link_python(facts, [str(PREDICATES)], paths))
    return {(g.path, g.line): g for g in found}


def _report(result, path: str, line: int):
    return next(g for g in result.gates if (g.location.path, g.location.line) == (path, line))


def _verdict(result, path: str, line: int, target: str = "sm_120a") -> str:
    return next(v.verdict.value for v in _report(result, path, line).verdicts if v.target == target)


def test_sglang_platform_attribute_reads_its_probe(result):
    # get_platform().is_sm100 -> _PLATFORM_PROBES["is_sm100"] -> is_sm100_supported, majors [10]
    gate = _report(result, TMEM, 24)
    assert gate.admits == ("sm_100a", "sm_103a")
    assert _verdict(result, TMEM, 24) == "GENUINE"
    assert "tcgen05" in next(v.reason for v in gate.verdicts if v.target == "sm_120a")


def test_sglang_partial_predicate_through_the_package_reexport(result):
    gate = _report(result, TMEM, 32)  # is_sm100_supported(), imported from sg.srt.utils (import *)
    assert gate.admits == ("sm_100a", "sm_103a")
    assert _verdict(result, TMEM, 32) == "POLICY"


def test_capability_reads_that_pick_no_path_are_no_gates(gates):
    assert (TMEM, 39) not in gates  # get_device_sm() >= 90: a log line
    assert (TMEM, 45) not in gates  # is_sm120(): a dtype
    assert (FP8, 60) not in gates  # has_device_capability(100): a log line


def test_vllm_exact_capability(result):
    gate = _report(result, FP8, 29)  # is_device_capability(100): 10.0 only
    assert gate.admits == ("sm_100a",)
    assert _verdict(result, FP8, 29) == "GENUINE"


def test_vllm_family_and_at_least_admit_sm120(gates, result):
    ccs = set(known_ccs())
    assert gates[(FP8, 32)].admits == tuple(sorted(cc for cc in ccs if cc // 10 == 12))  # family 12.x
    assert gates[(FP8, 39)].admits == tuple(sorted(cc for cc in ccs if cc >= 90))  # has_device_capability(90)
    assert gates[(FP8, 46)].admits == tuple(sorted(cc for cc in ccs if cc >= 90))  # >= DeviceCapability(9, 0)
    assert gates[(FP8, 53)].admits == tuple(sorted(cc for cc in ccs if cc >= 89))  # .to_int() >= 89
    for line in (32, 39, 46, 53):
        assert gates[(FP8, line)].exact
        assert "sm_120a" in _report(result, FP8, line).admits
        assert not any(v.target == "sm_120a" for v in _report(result, FP8, line).verdicts)


def test_backend_capability_methods_are_gates(gates):
    cutlass = gates[("vl/attention/backends/cutlass_mla.py", 8)]
    assert (cutlass.kind, cutlass.admits, cutlass.exact) == ("capability-method", (100, 103), True)
    assert cutlass.guards == ("vl.attention.backends.cutlass_mla.CutlassMLABackend.get_impl_cls",)
    assert ("vl/attention/backends/triton_mla.py", 6) not in gates  # admits every capability
    kernel = gates[("vl/model_executor/kernels/scaled_mm.py", 8)]  # is_supported: (ok, reason), int form
    assert kernel.admits == tuple(cc for cc in known_ccs() if cc >= 89)
    assert not kernel.exact  # current_platform.is_cuda() is not known
    assert kernel.guards == ("vl.model_executor.kernels.scaled_mm.CutlassFP8ScaledMMLinearKernel.apply_weights",)


def test_custom_op_gates_are_not_reported_until_the_op_is_linked(result):
    # CutlassMLAImpl.forward calls torch.ops._C: nothing archlint can judge yet.
    assert not [g for g in result.gates if g.location.path.startswith("vl/attention/")]


@pytest.fixture(scope="module")
def setup_result():
    return scan(ScanOptions(paths=(str(SETUP),), targets=("sm_120a",), use_cache=False, jobs=1))


def test_setup_py_target_list_is_one_gate_over_its_branch(setup_result):
    (gate,) = setup_result.gates
    assert (gate.location.path, gate.location.line) == ("setup.py", 51)
    # 12.0's append is left out: FLASH_ATTN_CUDA_ARCHS defaults to "80;90;100"
    assert gate.admits == ("sm_80", "sm_90a", "sm_100a")
    (verdict,) = gate.verdicts
    assert (verdict.target, verdict.verdict.value) == ("sm_120a", "POLICY")
    assert not any("flash_attn_ck" in hop.message or "fmha" in hop.message for hop in verdict.evidence)
    assert [(f.location.line, f.rule) for f in setup_result.findings] == [(51, "AL101")]


def test_capability_predicate_rows_are_checked(tmp_path):
    folder = tmp_path / "idioms"
    folder.mkdir()
    shipped = FIXTURES.parent / "rules" / "idioms"
    for path in shipped.glob("*.toml"):
        (folder / path.name).write_text(path.read_text())
    (folder / "mine.toml").write_text(
        '[[capability_predicate]]\nnames = ["at_least_sm"]\nrelation = "above"\nsource = "mine"\n')
    with pytest.raises(IdiomsError, match="relation.*at_least, exactly, same_major"):
        read_idioms(folder)


FORMS = '''import torch
from vl.platforms import current_platform


def tuple_exact(x):
    if current_platform.is_device_capability((12, 0)):
        return launch(x)


def tuple_at_least(x):
    if current_platform.has_device_capability((10, 3)):
        return launch(x)


def torch_major(x):
    if torch.cuda.get_device_capability()[0] >= 9:
        return launch(x)


def unpacked(x):
    major, minor = torch.cuda.get_device_capability()
    if major == 12 and minor == 1:
        return launch(x)


def launch(x):
    return x
'''


def test_tuple_arguments_and_torch_forms():
    facts = [extract_python("m/__init__.py", b""), extract_python("m/forms.py", FORMS.encode())]
    found = {g.local_function: g.admits for g in find_gates(link_python(facts, ["m"], ["m/__init__.py", "m/forms.py"]))}
    ccs = known_ccs()
    assert found["tuple_exact"] == (120,)
    assert found["tuple_at_least"] == tuple(cc for cc in ccs if cc >= 103)
    assert found["torch_major"] == tuple(cc for cc in ccs if cc >= 90)
    assert found["unpacked"] == (121,)
