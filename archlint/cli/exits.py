"""archlint's exit codes, and the error that stands for bad input."""

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


class UserError(Exception):
    """Bad input from the user (config, baseline, rule id): exit 2 with one line, no traceback."""
