"""Of the Python gates that guard a custom-op call, how many are linked through every layer: the op's
registration, the C++ function, its units, and a build list compiling a unit of the chain.

    python -m bench.layers /tmp/src/vllm-0.22.0 --target sm_120a

A site is one Python gate (a capability condition at path:line:col that archlint reads as a gate)
whose guarded code, directly or through up to four calls, makes at least one custom-op call
(`torch.ops.<ns>.<op>(...)` or a compiled extension's function)."""

from __future__ import annotations

import argparse
import collections

from archlint.engine.linking import _python_gates, link
from archlint.gates.ops import guarded_op_calls
from archlint.model.scan import ScanOptions


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--target", action="append", default=[])
    parser.add_argument("-v", action="store_true")
    args = parser.parse_args()
    options = ScanOptions(paths=(args.root,), targets=tuple(args.target))
    linked = link(options, eager=False)
    results = {r.gate.id: r for r in linked.context.gate_results}
    counts: collections.Counter[str] = collections.Counter()
    for gate in _python_gates(linked.pyindex, options.toolkit):
        reached = guarded_op_calls(linked.pyindex, gate)
        if not reached:
            continue
        counts["sites"] += 1
        result = results.get(gate.id)
        ops = result.layers.ops if result is not None and result.layers is not None else ()
        stage = ("registration" if ops else "none") if not any(link.units for link in ops) else (
            "block" if any(link.blocks for link in ops) else "unit")
        counts[stage] += 1
        if args.v:
            calls = sorted({f"{c.namespace}.{c.op}" for c, _ in reached})
            blocks = sorted({b for link in ops for b in link.blocks})
            print(f"{gate.path}:{gate.line}:{gate.col} {stage:12} {gate.text[:60]!r} ops={calls} blocks={blocks}")
    print(dict(counts))


if __name__ == "__main__":
    main()
