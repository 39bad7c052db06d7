"""Settings: argument > environment > tracesim.yaml > default; bad values fail at configure()."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracesim
from tracesim import _runtime
from tracesim._config import SETTINGS, Settings, resolve


def test_defaults() -> None:
    settings = resolve({}, environ={})
    assert settings == Settings()
    assert settings.exporters == ("jsonl",)
    assert settings.max_value_chars == 32 * 1024


def test_argument_beats_environment_beats_file_beats_default(tmp_path: Path) -> None:
    config = tmp_path / "tracesim.yaml"
    config.write_text("service_name: from-file\nmax_value_chars: 500\nmax_generator_items: 7\n")
    environ = {"TRACESIM_SERVICE_NAME": "from-env", "TRACESIM_MAX_VALUE_CHARS": "600"}
    settings = resolve({"service_name": "from-arg"}, environ=environ)
    assert settings.service_name == "from-arg"
    assert settings.max_value_chars == 600
    assert settings.max_generator_items == 7
    assert settings.jsonl_backups == 5


def test_standard_otel_variables_are_honoured_after_tracesim_ones() -> None:
    assert resolve({}, environ={"OTEL_SERVICE_NAME": "otel"}).service_name == "otel"
    both = {"OTEL_SERVICE_NAME": "otel", "TRACESIM_SERVICE_NAME": "ours"}
    assert resolve({}, environ=both).service_name == "ours"
    assert resolve({}, environ={"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}).otlp_protocol == "grpc"


def test_an_otlp_endpoint_in_the_environment_switches_the_default_exporter() -> None:
    assert resolve({}, environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}).exporters == (
        "otlp",
    )
    assert resolve(
        {}, environ={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x:4318/v1/traces"}
    ).exporters == ("otlp",)
    explicit = resolve({"exporters": ["jsonl"]}, environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"})
    assert explicit.exporters == ("jsonl",)


def test_exporters_from_the_environment_and_none() -> None:
    assert resolve({}, environ={"TRACESIM_EXPORTERS": "jsonl, console"}).exporters == ("jsonl", "console")
    assert resolve({}, environ={"TRACESIM_EXPORTERS": "none"}).exporters == ()


@pytest.mark.parametrize(
    ("arguments", "environ", "setting", "variable", "accepted"),
    [
        ({"max_value_chars": -1}, {}, "max_value_chars", "TRACESIM_MAX_VALUE_CHARS", "integer >= 64"),
        ({}, {"TRACESIM_MAX_VALUE_CHARS": "lots"}, "max_value_chars", "TRACESIM_MAX_VALUE_CHARS", "integer"),
        (
            {},
            {"TRACESIM_EXPORTERS": "jsonl,zipkin"},
            "exporters",
            "TRACESIM_EXPORTERS",
            "'jsonl', 'console', 'otlp'",
        ),
        ({"scoring_mode": "later"}, {}, "scoring_mode", "TRACESIM_SCORING_MODE", "background, inline, off"),
        ({}, {"TRACESIM_ENABLED": "maybe"}, "enabled", "TRACESIM_ENABLED", "true or false"),
        (
            {"evaluation_sample_rate": 1.5},
            {},
            "evaluation_sample_rate",
            "TRACESIM_EVALUATION_SAMPLE_RATE",
            "0 to 1",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            "otlp_protocol",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "grpc",
        ),
        ({"redact_patterns": ["email", "ssn"]}, {}, "redact_patterns", "TRACESIM_REDACT_PATTERNS", "email"),
        ({"redact": "yes"}, {}, "redact", None, "callable"),
    ],
)
def test_a_bad_value_names_the_setting_its_variable_and_the_accepted_values(
    arguments: dict[str, object], environ: dict[str, str], setting: str, variable: str | None, accepted: str
) -> None:
    with pytest.raises(tracesim.ConfigError) as info:
        resolve(arguments, environ=environ)
    error = info.value
    assert error.setting == setting
    assert error.env_var == variable
    assert accepted in error.accepted
    assert setting in str(error)
    if variable:
        assert variable in str(error)


def test_configure_raises_before_changing_anything() -> None:
    with pytest.raises(tracesim.ConfigError, match="max_value_chars"):
        tracesim.configure(max_value_chars=10)
    assert _runtime.current is None


def test_a_config_file_with_an_unknown_key_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "tracesim.yaml").write_text("service_nmae: typo\n")
    with pytest.raises(tracesim.ConfigError) as info:
        resolve({}, environ={})
    assert "service_nmae" in str(info.value)
    assert "service_name" in str(info.value)


def test_a_config_file_value_is_validated_like_any_other(tmp_path: Path) -> None:
    (tmp_path / "tracesim.yaml").write_text("capture: sometimes\n")
    with pytest.raises(tracesim.ConfigError) as info:
        resolve({}, environ={})
    assert "tracesim.yaml" in str(info.value)


def test_a_config_file_can_be_named_by_the_environment(tmp_path: Path) -> None:
    other = tmp_path / "conf" / "staging.yaml"
    other.parent.mkdir()
    other.write_text("service_name: staging\n")
    assert resolve({}, environ={"TRACESIM_CONFIG_FILE": str(other)}).service_name == "staging"
    with pytest.raises(tracesim.ConfigError, match="TRACESIM_CONFIG_FILE"):
        resolve({}, environ={"TRACESIM_CONFIG_FILE": str(tmp_path / "missing.yaml")})


def test_every_setting_is_a_field_and_documented() -> None:
    fields = set(Settings.__dataclass_fields__)
    assert {s.name for s in SETTINGS} == fields
    for s in SETTINGS:
        assert s.doc
        assert s.accepted
        assert all(v.startswith(("TRACESIM_", "OTEL_")) for v in s.env)


def test_every_setting_is_an_argument_of_configure() -> None:
    import inspect

    parameters = set(inspect.signature(tracesim.configure).parameters) - {"config_file"}
    assert parameters == {s.name for s in SETTINGS}
