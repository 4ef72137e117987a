"""archlint's gate verdicts measured against the compiler: `python -m bench.accuracy` (see docs/accuracy.md).

Modules, in the order a run uses them:

    projects    what each project's JIT hands the compiler (folders, defines, flags, SGLang's wrapper unit)
    generated   sources FlashInfer's JIT renders at build time, written for one instance per gate
    pairs       the (gate, excluded target) verdicts of a scan, their guarded units, the sample
    builds      the builds a sample needs, run through archlint.runtime.compile_probe, read back per pair
    scoring     verdict against compiler answer: confusion matrix, POLICY precision and recall, report
    bundle      the files exported builds read, packed for another machine
                (`python -m bench.accuracy.bundle jobs.json bundle.tar.xz`)
    __main__    the command line
"""
