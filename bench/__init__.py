"""Benchmarks run from a checkout of archlint, against real code and the compiler.

    python -m bench.accuracy ...      verdicts against nvcc building the guarded units (docs/accuracy.md)
    python bench/scan_bench.py        scan time and memory on the FlashInfer wheel (docs/performance.md)
    python bench/seed_case.py         the field report's gate on the real FlashInfer wheels
"""
