"""archlint: which GPU architectures does each gate shut out, and is that policy or genuine?"""

__version__ = "0.1.0"
