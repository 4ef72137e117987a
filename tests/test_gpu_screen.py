"""The text report for the targets asked for (`archlint scan PKG --target sm_120a`): the gates that
could be widened first, then those shut out for a real reason, the UNKNOWN ones with what would
settle each, the gates that admit the target where their code cannot work; the findings after.
And, in every text report, no block for a gate that excludes none of the targets unless -v."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from conftest import inside_fixture

from archlint.cli import cli
from archlint.model.findings import Evidence, EvidenceKind, Finding, Level, Location
from archlint.model.gates import GateReport
from archlint.report import Report, render
from archlint.report.matrix import build_matrix

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FLASHINFER = FIXTURES / "gate-flashinfer"
ROUTES = FIXTURES / "gate-backend-routes"
ARCH_ORDER = ("sm_80", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a")
VEC_DEQUANT = ("  flashinfer/jit/comm.py:19  gen_vec_dequant_module  "
               "current_compilation_context.get_nvcc_flags_list(supported_major_versions=[9, 10])")


def scan(fixture: Path, *args: str) -> list[str]:
    with inside_fixture(fixture):
        result = CliRunner().invoke(cli, ["scan", ".", "--no-cache", *args])
    assert result.exit_code in (0, 1), result.output
    return result.output.splitlines()


def heading(lines: list[str], start: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(start))


def test_one_target_leads_with_the_gates_that_could_be_widened():
    lines = scan(FLASHINFER, "--target", "sm_120a")
    assert lines[0] == ("sm_120a: 1 gate could be widened, 1 genuine, 1 empty, 1 unknown, 3 admitted, "
                        "0 admitted but cannot work")
    widen = heading(lines, "Can be widened on sm_120a: 1 gate; nothing the gate guards needs what sm_120a lacks")
    assert lines[widen + 1:widen + 3] == [
        VEC_DEQUANT, "      checked 1 unit, 1 kernel; no arch-sensitive construct; fix: add 12 to the gate's list (`--diff`, `--fix`)"]
    order = [heading(lines, title) for title in ("Can be widened", "Not widenable on sm_120a: 2 gates", "Unknown on sm_120a",
                                                 "Findings", "flashinfer/")]
    assert order == sorted(order)  # the findings, with their evidence, come after the gates
    genuine = lines.index("  flashinfer/jit/comm.py:25  gen_gemm_sm90_module  "
                          "current_compilation_context.get_nvcc_flags_list(supported_major_versions=[9])")
    assert lines[genuine + 1] == ("      GENUINE: `wgmma.fence.sync.aligned` in `warpgroup_arrive` needs sm_90a "
                                  "(arch-specific, cc 9.0 only); sm_120a lacks it [wgmma-sync]")
    assert not any(line == "Gates" for line in lines)  # the gate block only with -v
    assert lines[-1].endswith("; 7 gates")


def test_an_unknown_says_what_would_settle_it():
    lines = scan(FLASHINFER, "--target", "sm_120a")
    unknown = lines.index("  flashinfer/jit/comm.py:31  gen_missing_module  "
                          "current_compilation_context.get_nvcc_flags_list(supported_major_versions=[10])")
    assert lines[unknown + 1].startswith("      guarded sources could not be resolved")
    assert lines[unknown + 2] == ("      to settle: scan the tree that holds those sources (a build may generate "
                                  "them), or `--include-dir DIR` for a header")


def test_gates_admitting_a_target_where_their_code_cannot_work_are_listed_with_the_reason():
    lines = scan(FLASHINFER, "--target", "sm_90a,sm_120a")
    at = heading(lines, "Admitted, but cannot work: 2 gates;")
    assert lines[at + 1].startswith("  flashinfer/jit/comm.py:39  gen_xqa_module  ")
    assert lines[at + 2] == ("      sm_120a: kernel `xqa_sm90_kernel`, the only kernel it guards, compiles to an empty "
                             "body there (flashinfer/data/csrc/xqa_sm90.cu:5)")
    assert at < heading(lines, "Findings")
    # several targets: each entry names the ones it is about
    assert "      sm_120a: checked 1 unit, 1 kernel; no arch-sensitive construct; fix: add 12 to the gate's list " \
           "(`--diff`, `--fix`)" in lines


def test_targets_from_the_config_lead_the_same_way(tmp_path):
    config = tmp_path / "archlint.toml"
    config.write_text('targets = ["sm_120a"]\n')
    lines = scan(FLASHINFER, "--config", str(config))
    assert lines[0].startswith("sm_120a: 1 gate could be widened")
    assert heading(lines, "Can be widened on sm_120a") < heading(lines, "Findings")


def test_quiet_prints_the_findings_only():
    lines = scan(FLASHINFER, "--target", "sm_120a", "-q")
    assert lines[0].startswith("flashinfer/") and not any(line.startswith("Can be widened") for line in lines)


def test_a_gate_excluding_no_target_is_left_out_unless_verbose():
    route = '`top_k_sampling_from_probs` at flashinfer/sampling.py:27: route != "pipeline"'
    lines = scan(ROUTES)
    assert not any(line.startswith(route) for line in lines)
    assert "(1 more gate excludes none of the targets; -v lists them)" in lines
    assert lines[-1].endswith("; 3 gates")  # still counted
    assert any(line.startswith(route) for line in scan(ROUTES, "-v"))
    assert not any(line.startswith(route) for line in scan(ROUTES, "--target", "sm_120a", "-v")[:8])
    assert any(line.startswith(route) for line in scan(ROUTES, "--target", "sm_120a", "-v"))  # in the gate block


def test_without_targets_the_report_ends_with_a_line_per_target_and_how_to_lead_with_one():
    lines = scan(FLASHINFER)
    at = lines.index("Per target (`--target T` leads with T's gates that could be widened)")
    assert ("  sm_120a: 1 gate could be widened, 1 genuine, 1 empty, 1 unknown, 1 admitted, "
            "2 admitted but cannot work") in lines[at:]
    assert lines[0].startswith("flashinfer/")  # the findings first, as before


def _use_cub_report(**options) -> Report:
    """FlashInfer 0.7.2.post1's `top_k` gate `use_cub` (topk.py:997): it admits every target, and on
    sm_120a the clusters kernel it guards asks for more shared memory than the GPU has (AL105)."""
    where = Location("flashinfer/topk.py", 997, 8, 997, 15)
    gate = GateReport("flashinfer/topk.py:997:8", "use_cub", where, ARCH_ORDER, (), function="top_k")
    smem = Location("flashinfer/data/include/flashinfer/fast_topk_clusters_exact.cuh", 557, 3)
    problem = "`shared memory request of 232,448 bytes (MAX_SMEM_CARVEOUT) exceeds sm_120a's limit of 101,376 bytes`"
    finding = Finding("AL105", Level.ERROR,
                      f"Gate `use_cub` admits sm_120a, sm_121a, but {problem} in the code it guards is not available there",
                      where, ("sm_120a", "sm_121a"),
                      (Evidence(smem, f"{problem[1:-1]}", EvidenceKind.SMEM),), symbol="flashinfer.topk.top_k")
    return Report(root="/nowhere", findings=(finding,), gates=(gate,), targets=ARCH_ORDER, **options)


def test_a_gate_that_excludes_nothing_but_cannot_work_somewhere_is_said_where_it_matters():
    default = render("text", _use_cub_report()).splitlines()
    assert not any(line.startswith("`top_k` at flashinfer/topk.py:997") for line in default)  # no block of its own
    assert "(1 more gate excludes none of the targets; -v lists them)" in default
    assert default[0].startswith("flashinfer/topk.py:997:8: AL105 ")  # its finding says it
    asked = render("text", _use_cub_report(targets_asked=True)).splitlines()
    at = asked.index("Admitted, but cannot work: 1 gate; the gate lets the target through, but the code it guards "
                     "needs what the target lacks or compiles to nothing (AL105)")
    assert asked[at + 1] == "  flashinfer/topk.py:997  top_k  use_cub"
    assert asked[at + 2].startswith("      sm_120a, sm_121a: `shared memory request of 232,448 bytes")
    assert asked[at + 2].endswith("(flashinfer/data/include/flashinfer/fast_topk_clusters_exact.cuh:557)")
    [row] = build_matrix(_use_cub_report()).rows  # the matrix keeps its row, for the ! cells
    assert [cell.state for cell in row.cells][-3:] == ["admitted", "cannot work", "cannot work"]


def test_a_target_asked_without_its_suffix_is_one_target_named_as_its_build():
    lines = scan(FLASHINFER, "--target", "sm_120")
    assert lines[0] == ("sm_120a: 1 gate could be widened, 1 genuine, 1 empty, 1 unknown, 3 admitted, "
                        "0 admitted but cannot work")
    assert lines[1] == "" and lines[2].startswith("Can be widened on sm_120a: 1 gate;")
    # the verdict's note on the other build is said once, in its own parentheses
    assert lines[4].startswith("      checked 1 unit, 1 kernel; no arch-sensitive construct (assumes a sm_120a build; ")
