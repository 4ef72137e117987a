"""`archlint runtime` over a stubbed scan (and end to end once the pipeline imports)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import inside_fixture
from test_runtime_driver import FakeLaunchDriver

import archlint.engine as engine
from archlint.model.findings import (
    Evidence,
    EvidenceKind,
    Finding,
    Level,
    Location,
    Verdict,
)
from archlint.model.gates import GateReport, TargetVerdict
from archlint.model.scan import ScanResult
from archlint.runtime import driver as drv
from archlint.runtime.command import runtime_command
from archlint.runtime.compile_probe import find_nvcc

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "runtime-major9"
MODULES = "mylib/jit/modules.py"
PROBE_UNIT = FIXTURE.parent / "runtime-probe" / "empty_on_sm120.cu"


def _gate(gate_id, line, text, verdict, reason, evidence=(), empty=(), target="sm_120a", admits=()):
    return GateReport(gate_id, text, Location(MODULES, line, 17), admits,
                      (TargetVerdict(target, verdict, reason, tuple(evidence), tuple(empty)),))


def fake_result(target="sm_120a"):
    builds = Evidence(Location(MODULES, 9, 5), "builds mylib/csrc/rmsnorm.cu", EvidenceKind.BUILDS, source="mylib/csrc/rmsnorm.cu")
    tcgen05 = Evidence(Location("mylib/csrc/tcgen05_gemm.cu", 5, 16), "compiles `tcgen05.alloc`", EvidenceKind.CONSTRUCT,
                       name="tcgen05.alloc")
    compiled_out = Evidence(Location("mylib/include/allreduce_impl.cuh", 4, 1), "#if __CUDA_ARCH__ < 1200",
                            EvidenceKind.EMPTY_KERNEL, name="oneshot_allreduce_kernel")
    empty = Evidence(compiled_out.location, "oneshot_allreduce_kernel", EvidenceKind.EMPTY_KERNEL, name="oneshot_allreduce_kernel")
    gates = (
        _gate("g-policy", 8, "get_nvcc_flags_list(supported_major_versions=[9, 10])", Verdict.POLICY,
              "nothing reachable from 1 guarded source(s) needs what sm_120a lacks", [builds], target=target),
        _gate("g-genuine", 14, "get_nvcc_flags_list(supported_major_versions=[10])", Verdict.GENUINE,
              "tcgen05.alloc needs sm_100a/sm_100f", [tcgen05],
              target=target),
        _gate("g-empty", 20, "get_nvcc_flags_list(supported_major_versions=[9, 10])", Verdict.EMPTY,
              "kernel body compiled out", [compiled_out], empty=(empty,), target=target),
        GateReport("g-admits", "is_sm120_supported()", Location(MODULES, 30, 1), (target,), ()),
    )
    al204 = Finding("AL204", Level.WARNING,
                    "`cudaFuncSetAttribute(rmsnorm_kernel, ..., 163840)` needs 163,840 bytes of shared memory per block, "
                    "over the 101,376 bytes a block can have on sm_120a",
                    Location("mylib/csrc/rmsnorm.cu", 12, 3), targets=(target,),
                    properties=(("nbytes", "163840"), ("limit", "101376"), ("kind", "dynamic-attr")))
    other = Finding("AL202", Level.WARNING, "silent no-op", Location("mylib/include/allreduce_impl.cuh", 4, 1))
    return ScanResult(str(FIXTURE), (al204, other), (), gates, files_scanned=6, targets=(target,))


@pytest.fixture
def stub_scan(monkeypatch):
    seen = []

    def scan(options):
        seen.append(options)
        return fake_result(options.targets[0])

    monkeypatch.setattr(engine, "scan", scan, raising=False)
    return seen


def run(*args):
    """Paths are from the repository root; the fixture is read as a repository of its own, so they
    are from its folder (`mylib/...`)."""
    with inside_fixture(FIXTURE):
        return CliRunner().invoke(runtime_command, [str(FIXTURE), *args])


def test_profile_report_in_the_devices_terms(stub_scan):
    result = run("--device-profile", "sm_120")
    assert result.exit_code == 1, result.output
    assert stub_scan[0].targets == ("sm_120a",) and stub_scan[0].paths == (str(FIXTURE),)
    out = result.output
    assert "profile: RTX PRO 6000 Blackwell (profile)" in out and "102,400 B (100.0 KB)" in out
    assert (f"{MODULES}:8:17: AL301 This machine's RTX PRO 6000 Blackwell (profile) (sm_120a) is shut out by gate "
            "`get_nvcc_flags_list(supported_major_versions=[9, 10])`") in out
    assert f"{MODULES}:14:17: GENUINE" in out and "mylib/csrc/tcgen05_gemm.cu:5:16: compiles `tcgen05.alloc`" in out
    assert "empty on sm_120a: oneshot_allreduce_kernel" in out
    assert "is_sm120_supported" not in out  # admits the device
    assert "mylib/csrc/rmsnorm.cu:12:3: AL204 163,840 bytes of shared memory per block requested" in out
    assert "allows at most 101,376 bytes (read from the profile)" in out
    assert "1 POLICY, 1 GENUINE, 1 EMPTY; 2 findings; 1 other findings" in out


def test_json_to_a_file(stub_scan, tmp_path):
    target = tmp_path / "report.json"
    result = run("--device-profile", "12.0", "--format", "json", "-o", str(target), "--fail-on", "none")
    assert result.exit_code == 0 and result.output == ""
    data = json.loads(target.read_text())
    assert data["device"]["smem_per_block_optin"] == 101376 and data["target"] == "sm_120a"
    assert [g["verdict"] for g in data["gates"]] == ["POLICY", "GENUINE", "EMPTY"]
    assert data["gates"][0]["units"] == ["mylib/csrc/rmsnorm.cu"]
    assert sorted(f["rule"] for f in data["findings"]) == ["AL204", "AL301"]
    assert data["smem"] == [{"device_limit": 101376, "fits": False, "kb_limit": 101376,
                             "location": {"col": 3, "line": 12, "path": "mylib/csrc/rmsnorm.cu"}, "nbytes": 163840}]


def test_units_are_the_files_the_evidence_builds_not_its_words(monkeypatch):
    # a generated source's hop speaks of the expression that names it; its typed source is the file
    rendered = Evidence(Location(MODULES, 9, 5), "builds `gen_dir / name`, rendered from a template", EvidenceKind.BUILDS,
                        source="mylib/csrc/allreduce.cu")
    worded = Evidence(Location(MODULES, 10, 5), "builds mylib/csrc/rmsnorm.cu", EvidenceKind.CALL, name="build")
    gate = _gate("g", 8, "get_nvcc_flags_list(supported_major_versions=[9, 10])", Verdict.POLICY, "nothing needed",
                 [rendered, worded])
    result = ScanResult(str(FIXTURE), (), (), (gate,), files_scanned=1, targets=("sm_120a",))
    monkeypatch.setattr(engine, "scan", lambda options: result, raising=False)
    data = json.loads(run("--device-profile", "sm_120", "--format", "json").output)
    assert data["gates"][0]["units"] == ["mylib/csrc/allreduce.cu"]


def test_hopper_device_from_a_fake_driver_with_launch_probe(stub_scan, monkeypatch):
    fake = FakeLaunchDriver()
    monkeypatch.setattr(drv, "LOAD_LIBRARY_HOOK", lambda: fake)
    result = run("--launch-probe")
    assert result.exit_code == 1, result.output
    out = result.output
    assert "device 0: NVIDIA H200" in out and stub_scan[0].targets == ("sm_90a",)
    assert "163,840 B, limit 232,448 B: fits" in out  # the SM120 request fits on 9.0: no AL204
    assert "AL204" not in out
    assert "232,448 B (the opt-in limit): launched" in out
    assert "232,449 B (limit +1 B): failed: cuFuncSetAttribute failed: CUDA_ERROR_INVALID_VALUE (1)" in out


def test_no_gpu_is_one_line_and_exit_2(stub_scan, monkeypatch):
    monkeypatch.setattr(drv, "LOAD_LIBRARY_HOOK", lambda: FakeLaunchDriver(fail={"cuInit": 100}))
    result = CliRunner().invoke(runtime_command, [str(FIXTURE)])
    assert result.exit_code == 2
    assert result.output == ("archlint runtime: no usable GPU: cuInit failed: CUDA_ERROR_NO_DEVICE (100) "
                             "(use --device-profile sm_120 to stand in for one)\n")
    assert not stub_scan


@pytest.mark.parametrize(
    "args,message",
    [
        (["--device", "0", "--device-profile", "sm_90"], "choose one of --device and --device-profile"),
        (["--device-profile", "sm_90", "--launch-probe"], "--launch-probe needs a real GPU"),
        (["--device-profile", "sm_90", "--target-suffix", "f"], "family-specific 'f' targets exist from sm_100f on"),
        (["--device-profile", "sm_77"], "no device profile for compute capability 7.7"),
    ],
)
def test_usage_errors(stub_scan, args, message):
    result = run(*args)
    assert result.exit_code == 2 and message in result.output


def test_target_suffix_plain(stub_scan):
    run("--device-profile", "sm_120", "--target-suffix", "plain")
    assert stub_scan[0].targets == ("sm_120",)


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed here; the compile probe runs it")
def test_compile_probe_per_gate(stub_scan, tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path))
    result = run("--device-profile", "sm_120", "--compile-probe", "--unit", str(PROBE_UNIT))
    out = result.output
    assert "Compile probe (sm_120a)" in out
    assert "g-policy:\n    mylib/csrc/rmsnorm.cu [sm_120a]: built" in out
    assert "g-genuine:\n    mylib/csrc/tcgen05_gemm.cu [sm_120a]: arch-error" in out and "tcgen05.alloc" in out
    assert "g-empty:\n    mylib/include/allreduce_impl.cuh [sm_120a]: built" in out  # the header, wrapped
    assert "--unit:\n    ../runtime-probe/empty_on_sm120.cu [sm_120a]: built-empty" in out and "lamport_like_kernel" in out


def _pipeline_missing() -> str:
    if not hasattr(engine, "scan"):
        return "archlint.engine.scan does not exist yet"
    for module in ("archlint.engine.pipeline", "archlint.knowledge.kb"):
        if importlib.util.find_spec(module) is None:
            return f"the scan pipeline is incomplete ({module} is missing)"
    return ""


@pytest.mark.skipif(bool(_pipeline_missing()), reason=_pipeline_missing() or "n/a")
def test_end_to_end_major9_fixture(tmp_path, monkeypatch):
    monkeypatch.setenv("ARCHLINT_CACHE_DIR", str(tmp_path))
    result = run("--device-profile", "sm_90", "--format", "json", "--no-cache")
    data = json.loads(result.output)
    verdicts = {g["text"].split("=")[-1].rstrip(")"): g["verdict"] for g in data["gates"]}
    assert verdicts == {"[10, 12]": "POLICY", "[10]": "GENUINE", "[12]": "EMPTY"}
    assert [f["rule"] for f in data["findings"]] == ["AL301"]
    assert result.exit_code == 1
