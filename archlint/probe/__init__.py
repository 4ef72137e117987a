"""Measurements by the compiler: nvcc's front end sizes what static reading can only bound. Copies of
the scanned code are compiled in a scratch folder; nothing is linked, run or written in the tree."""
