"""The version of tracesim-pytest: always tracesim's (the two are released together)."""

__version__ = "0.1.0"
