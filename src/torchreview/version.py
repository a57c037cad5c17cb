"""The version, in a module of its own: importing it runs nothing else."""

__version__ = "0.1.0"
