"""The version of tracesim: the one place it is written (the build reads it from here)."""

__version__ = "0.1.0"
"""The installed version of tracesim (the integrations require exactly this one)."""
