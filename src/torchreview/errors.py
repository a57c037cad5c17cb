"""Errors a user sees and the exit codes of every command.

Kept apart from the command line so that any module (baseline, since, the LSP
server, stdin input) can raise a usage error or return an exit code without
importing ``cli``, which imports the commands: no import cycle.
"""

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user (option, path, baseline, ...): reported as one
    ``torchreview: error: ...`` line and exit code ``EXIT_ERROR``, never a traceback."""
