"""Sources a JIT renders from Jinja templates: the template read in place of what it renders."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from archlint.engine import scan
from archlint.extract.python.facts import extract_python
from archlint.lang.cpp.jinja import stub_template
from archlint.link.generated import renderings
from archlint.model.scan import ScanOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gate-jinja-generated"

CONFIG = b"""#pragma once
using DTypeKV = {{ dtype_kv }};
constexpr int HEAD_DIM = {{ head_dim }};
#define ADDITIONAL_FUNC_PARAMS {{ additional_func_params }}
{% if use_fp8 %}#include <cuda_fp8.h>{% endif %}
struct Params {
  {{ additional_params_decl }}
};
{{ variant_decl }}
"""


def test_stub_keeps_offsets_and_reads_values_as_names():
    stubbed, holes = stub_template(CONFIG)
    assert len(stubbed) == len(CONFIG) and stubbed.count(b"\n") == CONFIG.count(b"\n")
    assert b"{{" not in stubbed and b"{%" not in stubbed
    assert b"using DTypeKV = __jinja_dtype_;" in stubbed  # cut to the tag's width
    assert b"#include <cuda_fp8.h>" in stubbed  # both arms of an `if` are read
    assert [(h.line, h.name, h.kind) for h in holes] == [
        (4, "additional_func_params", "code"),
        (7, "additional_params_decl", "code"),
        (9, "variant_decl", "code"),
    ]


def test_kernel_named_at_render_time():
    _, holes = stub_template(b"template __global__ void {{ inst.kernel_name }}<{{ inst.mode }}>(Args const);\n"
                             b"int y = {{ fn }}(3);\n")
    assert [(h.name, h.kind) for h in holes] == [("inst.kernel_name", "kernel"), ("fn", "code")]


def test_renderings_follow_the_spec_function():
    path = "fi/jit/mamba.py"
    found = renderings(extract_python(path, (FIXTURE / path).read_bytes()))
    assert [(r.function, r.template, r.output) for r in found] == [
        ("_gen_module", "state_update_customize_config.jinja", "state_update_config.inc"),
    ]


def test_file_handle_is_the_one_opened_above_the_read():
    source = b'''
def gen(gen_directory):
    with open(CSRC / "a_config.jinja") as f:
        config_templ = jinja2.Template(f.read())
    with open(CSRC / "a_kernel_inst.jinja") as f:
        kernel_templ = jinja2.Template(f.read())
    for mode in MODES:
        dest_path = gen_directory / f"a_{mode}.cu"
        write_if_different(dest_path, kernel_templ.render(mode=mode))
    write_if_different(gen_directory / "a_config.inc", config_templ.render())
'''
    found = {(r.template, r.output) for r in renderings(extract_python("x.py", source))}
    assert found == {("a_kernel_inst.jinja", "a_{}.cu"), ("a_config.jinja", "a_config.inc")}


@lru_cache(maxsize=1)
def _scan():
    return scan(ScanOptions(paths=(str(FIXTURE),), use_cache=False, jobs=1))


def _gate(path: str, line: int):
    return next(g for g in _scan().gates if g.location.path == path and g.location.line == line)


def test_generated_config_resolves_to_its_template():
    verdicts = {v.target: v.verdict for v in _gate("fi/jit/mamba.py", 29).verdicts}
    assert verdicts["sm_120a"] == "POLICY" and verdicts["sm_90a"] == "POLICY"


def test_code_placeholder_no_scanned_call_fills_keeps_unknown():
    verdicts = _gate("fi/jit/decode.py", 51).verdicts
    assert {v.verdict for v in verdicts} == {"UNKNOWN"}
    assert all("`{{ variant_decl }}`" in v.reason and "which no scanned code calls" in v.reason for v in verdicts)


def test_code_placeholder_filled_from_the_callers_literal():
    """`variant_decl` is the include every caller passes; the blocker is in the included header."""
    gate = _gate("fi/jit/decode.py", 30)
    verdicts = {v.target: v for v in gate.verdicts}
    assert verdicts["sm_90a"].verdict == "GENUINE" and "cvt.rn.satfinite.e2m1x2.f32" in verdicts["sm_90a"].reason
    hops = [e.location.path for e in verdicts["sm_90a"].evidence]
    assert hops[-2:] == ["fi/csrc/decode_customize_config.jinja", "fi/include/fi/variants.cuh"]
    assert verdicts["sm_110a"].verdict == "POLICY"
    assert "read as the scanned callers fill it" in verdicts["sm_110a"].reason  # the POLICY says what it assumed


def test_kernel_instances_named_at_render_time():
    verdicts = {v.target: v.verdict for v in _gate("fi/jit/comm.py", 20).verdicts}
    assert verdicts["sm_80"] == "GENUINE" and verdicts["sm_120a"] == "POLICY"


def _reader(source: bytes):
    from archlint.link.python import link_python
    from archlint.link.values import Reader

    index = link_python([extract_python("pkg/spec.py", source)], ["pkg"], {"pkg/spec.py", "pkg/__init__.py"})
    return Reader(index), index


SPEC = b'''
DECLS = {"fa2": "#include <fi/variants.cuh>", "fa3": "#include <fi/hopper/variants.cuh>"}


def gen_customize(variant_decl, extra=""):
    return render(variant_decl=variant_decl, extra=extra)


def gen_default(backend):
    decl = DECLS["fa2"] if backend == "fa2" else DECLS["fa3"]
    return gen_customize(decl)


def gen_from_args(*args):
    return gen_customize(*args)


def gen_with_name(name):
    return gen_customize(f"struct {name} {{ }};")
'''


def test_values_follow_every_scanned_call_and_stay_unknown_on_a_splat():
    reader, index = _reader(SPEC)
    module = index.module_of_path["pkg/spec.py"]
    value = next(c for c in index.modules[module].calls if c.callee == "render").expr.kwarg("variant_decl")
    texts = reader.texts(module, "gen_customize", value)
    assert not texts.known and "splat" in texts.why  # gen_from_args passes `*args`


def test_values_read_dict_entries_conditionals_and_fstrings():
    reader, index = _reader(SPEC.replace(b"def gen_from_args(*args):\n    return gen_customize(*args)\n", b""))
    module = index.module_of_path["pkg/spec.py"]
    value = next(c for c in index.modules[module].calls if c.callee == "render").expr.kwarg("variant_decl")
    texts = reader.texts(module, "gen_customize", value)
    assert texts.values == {"#include <fi/variants.cuh>", "#include <fi/hopper/variants.cuh>",
                            "struct __archlint_value { };"}
    extra = next(c for c in index.modules[module].calls if c.callee == "render").expr.kwarg("extra")
    assert reader.texts(module, "gen_customize", extra).values == {""}  # the default every call leaves


def test_a_template_named_at_run_time_renders_each_template_it_spells():
    """`open(CSRC_DIR / f"{prefix}_kernel_inst.jinja")` over `["allgather", "allgather_ll"]`
    (FlashInfer's gen_gemm_sm100_module): both templates are the gate's units."""
    gate = _gate("fi/jit/comm.py", 37)
    assert gate.sources == ("fi/csrc/allgather_kernel_inst.jinja", "fi/csrc/allgather_ll_kernel_inst.jinja")
    verdicts = {v.target: v.verdict for v in gate.verdicts}
    assert verdicts["sm_80"] == "GENUINE" and verdicts["sm_120a"] == "POLICY"


def test_each_branch_renders_its_own_template():
    """FlashInfer's `gen_customize_single_prefill_module`: the `fa2` and `fa3` arms bind the same names
    to different templates; each arm's config is rendered from its own template only."""
    code = b'''
def gen_module(backend, gen_directory):
    if backend == "fa2":
        with open(CSRC_DIR / "prefill_customize_config.jinja") as f:
            config_templ = jinja2.Template(f.read())
        generated_inc_str = config_templ.render(dtype="half")
        write_if_different(gen_directory / "prefill_config.inc", generated_inc_str)
    elif backend == "fa3":
        with open(CSRC_DIR / "prefill_sm90_customize_config.jinja") as f:
            config_templ = jinja2.Template(f.read())
        generated_inc_str = config_templ.render(dtype="half")
        write_if_different(gen_directory / "prefill_sm90_config.inc", generated_inc_str)
'''
    found = {(r.template, r.output) for r in renderings(extract_python("fi/jit/prefill.py", code))}
    assert found == {("prefill_customize_config.jinja", "prefill_config.inc"),
                     ("prefill_sm90_customize_config.jinja", "prefill_sm90_config.inc")}


def test_a_file_name_formatted_on_its_own_line_is_the_rendered_source():
    """`filename = f"..._{mode}_inst.cu"` then `dest_path = gen_directory / filename`: the written
    file is the template's rendering, not an unresolved source."""
    gate = _gate("fi/jit/comm.py", 54)
    assert gate.sources == ("fi/csrc/allgather_kernel_inst.jinja",)
    assert {v.target: v.verdict for v in gate.verdicts}["sm_120a"] == "POLICY"
