"""tracesim: trace LLM agent functions with OpenTelemetry and score their outputs online."""

from tracesim._errors import ConfigError, TracesimError
from tracesim._version import __version__

__all__ = ["ConfigError", "TracesimError", "__version__"]
