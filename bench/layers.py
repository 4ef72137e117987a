"""How far archlint links Python down to the build, layer by layer.

    python -m bench.layers /tmp/src/vllm-0.22.0 --target sm_120a [-v]

1. Sites: a site is one Python gate archlint reads (a capability condition, or a capability method
   such as `is_supported`, at path:line:col) whose guarded code, directly or through up to four
   calls, calls a custom op (`torch.ops.<ns>.<op>(...)`). Each is counted by the deepest layer its
   op calls reach: a registration, a defining unit, a build list (an arch-specific block, or the
   build's own list that compiles the extension's other sources).
2. Calls: every `torch.ops.<ns>.<op>(...)` call of the scanned Python whose namespace starts with
   `--namespace` (default `_C`), counted the same way.
"""

from __future__ import annotations

import argparse
import collections

from archlint.engine.linking import _python_gates, link
from archlint.engine.steps import scan_targets
from archlint.gates.build_lists import WHOLE_KIND, cmake_gates
from archlint.gates.ops import OpCallFinder, OpLinker, blocks_by_unit
from archlint.link.ops import link_ops, op_calls
from archlint.model.scan import ScanOptions


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--target", action="append", default=[])
    parser.add_argument("--namespace", default="_C")
    parser.add_argument("-v", action="store_true")
    args = parser.parse_args()
    options = ScanOptions(paths=(args.root,), targets=tuple(args.target))
    linked = link(options, eager=False)
    pyindex = linked.pyindex
    assert pyindex is not None
    results = {r.gate.id: r for r in linked.context.gate_results}
    sites: collections.Counter[str] = collections.Counter()
    finder = OpCallFinder(pyindex)
    for gate in _python_gates(pyindex, options.toolkit):
        reached = [call for call, _ in finder.reached(gate) if call.kind == "torch-op"]
        if not reached:
            continue
        result = results.get(gate.id)
        links = result.layers.ops if result is not None and result.layers is not None else ()
        stage = _stage(bool(links), any(link.units for link in links), any(link.blocks for link in links),
                       any(not b.startswith(WHOLE_KIND) and b in results for link in links for b in link.blocks))
        sites["sites"] += 1
        sites[stage] += 1
        if args.v:
            ops = sorted({f"{c.namespace}.{c.op}" for c in reached})
            blocks = sorted({b for link in links for b in link.blocks})
            print(f"site {gate.path}:{gate.line}:{gate.col} {stage} {gate.text[:60]!r} ops={ops} lists={blocks}")
    print("sites:", dict(sites))
    print("calls:", dict(_calls(linked, pyindex, options, args.namespace, args.v)))


def _stage(registration: bool, unit: bool, block: bool, arch_block: bool) -> str:
    if arch_block:
        return "arch-block"
    if block:
        return "build-list"
    return "unit" if unit else "registration" if registration else "none"


def _calls(linked, pyindex, options: ScanOptions, namespace: str, verbose: bool) -> collections.Counter[str]:
    cmake = {f.file.path: f.cmake for f in linked.facts if f.cmake is not None}
    lists, wholes = cmake_gates(cmake, tuple(f.path for f in linked.discovery.files), None, scan_targets(options))
    blocks = blocks_by_unit([*lists, *wholes])
    linker = OpLinker.of(linked.index)
    calls = [call for module in sorted(pyindex.modules) for facts in [pyindex.modules.get(module)] if facts is not None
             for call in op_calls(facts, lambda name: False)
             if call.kind == "torch-op" and call.namespace.startswith(namespace)]
    counts: collections.Counter[str] = collections.Counter(calls=len(calls))
    for binding in link_ops(calls, linker.index, tables=linker.tables):
        counts["registration"] += 1
        if binding.units:
            counts["unit"] += 1
        built = {b.kind for unit in binding.units for b in blocks.get(unit, ())}
        if built:
            counts["build-list"] += 1
        elif verbose:
            call = binding.call
            print(f"call {call.path}:{call.line} {call.namespace}.{call.op} units={list(binding.units)} (no build list)")
    return counts


if __name__ == "__main__":
    main()
