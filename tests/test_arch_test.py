"""The arch test behind a gate whose own text names no architecture (`backend == "cake"`, where the
backend is chosen from the capability in a helper or an earlier assignment): found by the gate
detection, carried to the reports, and written back as Python by `unparse`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import inside_fixture

from archlint.cli import cli
from archlint.extract.python.facts import extract_python
from archlint.gates.detect import find_gates
from archlint.lang.python.unparse import unparse
from archlint.link.python import link_python

ROUTES = Path(__file__).resolve().parents[1] / "fixtures" / "gate-backend-routes"

UTILS = '''import torch


def get_compute_capability(device):
    return torch.cuda.get_device_capability(device)


def is_sm90a_supported(device):
    major, _ = get_compute_capability(device)
    return major == 9
'''

DECODE = '''from .utils import get_compute_capability, is_sm90a_supported


def _select_decode_backend(device):
    major, _ = get_compute_capability(device)
    return "cake" if major == 10 else "xqa"


def batch_decode(query, backend="auto"):
    if backend == "auto":
        backend = (
            "trtllm-gen" if get_compute_capability(query.device)[0] == 10 else "xqa"
        )
    if backend == "xqa":
        return run_xqa(query)
    return None


def cake_decode(query):
    chosen = _select_decode_backend(query.device)
    if chosen == "cake":
        return run_cake(query)
    if is_sm90a_supported(query.device):
        return run_sm90(query)
    major, _ = get_compute_capability(query.device)
    if major >= 10:
        return run_cake(query)
    return None


def run_xqa(query):
    return query


def run_cake(query):
    return query


def run_sm90(query):
    return query
'''


@pytest.fixture(scope="module")
def gates():
    sources = {"fi/__init__.py": "", "fi/utils.py": UTILS, "fi/decode.py": DECODE}
    facts = [extract_python(path, text.encode()) for path, text in sources.items()]
    index = link_python(facts, ["fi"], list(sources))
    return {(g.path, g.text): g for g in find_gates(index)}


def test_a_backend_chosen_in_a_helper_points_at_the_helpers_comparison(gates):
    gate = gates["fi/decode.py", 'chosen == "cake"']
    assert gate.admits == (100, 103)
    test = gate.arch_test
    assert test is not None and test.name == "major == 10"
    assert (test.location.path, test.location.line) == ("fi/decode.py", 6)  # the helper's return


def test_a_backend_assigned_from_the_capability_points_at_the_assignment(gates):
    test = gates["fi/decode.py", 'backend == "xqa"'].arch_test
    assert test is not None and test.name == "get_compute_capability(query.device)[0] == 10"
    assert test.location.line == 11


def test_a_condition_naming_an_architecture_needs_no_arch_test(gates):
    assert gates["fi/decode.py", "is_sm90a_supported(query.device)"].arch_test is None
    assert gates["fi/decode.py", "major >= 10"].arch_test is None


@pytest.mark.parametrize("source", [
    "get_compute_capability(query.device)[0] == 10 and not (x.major, minor) in [(9, 0), (10, 3)]",
    "a if b else -c + 3 * (d - 1) - (e - f)",
    'f"sm_{cc}" in {"sm_90": 1} or flags[1:] is not None or g(*xs, k=[1, 2], **kw)',
    "(1,) == t and (a or b) and (-2) ** 2 == 4",
])
def test_unparse_writes_the_condition_back(source):
    tests = extract_python("m.py", f"def f():\n    if {source}:\n        pass\n".encode()).tests
    assert unparse(next(t for t in tests if t.kind == "if").expr) == source


def test_reports_show_the_arch_test_beside_the_gate():
    with inside_fixture(ROUTES):
        text = CliRunner().invoke(cli, ["gates", ".", "--no-cache"]).output.splitlines()
        document = json.loads(CliRunner().invoke(cli, ["scan", ".", "--no-cache", "--format", "json"]).output)
    assert ('`batch_decode_with_kv_cache` at flashinfer/decode.py:19: backend == "cake" '
            "(arch test `major == 10`, line 12) (admits sm_100a, sm_103a)") in text
    [gate] = [g for g in document["gates"] if g["text"] == 'backend == "cake"']
    assert gate["arch_test"] == {"path": "flashinfer/decode.py", "line": 12, "col": 1, "text": "major == 10"}
    assert not any("arch_test" in g for g in document["gates"] if g["text"].startswith("current_compilation_context"))


def test_a_predicate_named_for_the_sm_version_names_an_architecture(gates):
    sources = {"fi/__init__.py": "", "fi/utils.py": UTILS, "fi/gemm.py": '''from .utils import get_compute_capability


def _match_sm_version(device, sm_version):
    major, minor = get_compute_capability(device)
    device_arch = f"{major * 10 + minor}"
    return device_arch in sm_version


def tgv_gemm_sm100(a):
    if not _match_sm_version(a.device, ["100", "103", "107"]):
        raise ValueError("TGV GEMM requires SM100, SM103 or SM107")
    return a
'''}
    facts = [extract_python(path, text.encode()) for path, text in sources.items()]
    found = {g.text: g for g in find_gates(link_python(facts, ["fi"], list(sources)))}
    gate = found['not _match_sm_version(a.device, ["100", "103", "107"])']
    assert gate.admits == (100, 103) and gate.arch_test is None


def test_a_dtype_named_compute_names_no_architecture():
    sources = {"fi/__init__.py": "", "fi/utils.py": UTILS, "fi/kda.py": '''from .utils import get_compute_capability


def _supports_affine_split_launch(device):
    return get_compute_capability(device) in ((10, 0), (10, 3))


def _launch_affine_split(device):
    return device


def prepare(compute_dtype, device):
    if compute_dtype == "tf32" and _supports_affine_split_launch(device):
        return _launch_affine_split(device)
    return 0
'''}
    facts = [extract_python(path, text.encode()) for path, text in sources.items()]
    found = {g.text: g for g in find_gates(link_python(facts, ["fi"], list(sources)))}
    test = found['compute_dtype == "tf32" and _supports_affine_split_launch(device)'].arch_test
    assert test is not None and test.name == "get_compute_capability(device) in ((10, 0), (10, 3))"
