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
        ({"max_value_chars": -1}, {}, "max_value_chars", None, "integer >= 64"),
        ({}, {"TRACESIM_MAX_VALUE_CHARS": "lots"}, "max_value_chars", "TRACESIM_MAX_VALUE_CHARS", "integer"),
        (
            {},
            {"TRACESIM_EXPORTERS": "jsonl,zipkin"},
            "exporters",
            "TRACESIM_EXPORTERS",
            "'jsonl', 'console', 'otlp'",
        ),
        ({"scoring_mode": "later"}, {}, "scoring_mode", None, "background, inline, off"),
        ({}, {"TRACESIM_ENABLED": "maybe"}, "enabled", "TRACESIM_ENABLED", "true or false"),
        ({"evaluation_sample_rate": 1.5}, {}, "evaluation_sample_rate", None, "0 to 1"),
        (
            {},
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            "otlp_protocol",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "grpc",
        ),
        ({"redact_patterns": ["email", "ssn"]}, {}, "redact_patterns", None, "email"),
        ({"redact": "yes"}, {}, "redact", None, "callable"),
    ],
)
def test_a_bad_value_names_the_setting_where_it_came_from_and_the_accepted_values(
    arguments: dict[str, object], environ: dict[str, str], setting: str, variable: str | None, accepted: str
) -> None:
    with pytest.raises(tracesim.ConfigError) as info:
        resolve(arguments, environ=environ)
    error = info.value
    assert error.setting == setting
    assert error.env_var == variable
    assert accepted in error.accepted
    assert setting in str(error)
    if variable:  # the variable that held the value, and no other source
        assert f"(environment variable {variable}): got " in str(error)
        assert error.source is None
    else:  # the argument, never a variable the user did not set
        assert error.source == f"configure({setting}=...)"
        assert "environment variable" not in str(error)


def test_an_error_names_the_source_of_the_bad_value_file_variable_or_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tracesim.yaml").write_text("scoring_workers: x\n")
    with pytest.raises(tracesim.ConfigError) as from_file:
        tracesim.configure(exporters=[])
    assert str(from_file.value) == (
        "invalid value for setting 'scoring_workers': got 'x' from tracesim.yaml; accepted: an integer >= 1"
    )
    assert from_file.value.env_var is None

    monkeypatch.setenv("TRACESIM_SCORING_WORKERS", "y")  # beats the file, so it is what is wrong
    with pytest.raises(tracesim.ConfigError) as from_env:
        tracesim.configure(exporters=[])
    assert str(from_env.value) == (
        "invalid value for setting 'scoring_workers' (environment variable TRACESIM_SCORING_WORKERS): "
        "got 'y'; accepted: an integer >= 1"
    )

    with pytest.raises(tracesim.ConfigError) as from_argument:
        tracesim.configure(exporters=[], scoring_workers=0)  # beats both
    assert str(from_argument.value) == (
        "invalid value for setting 'scoring_workers': got 0 from configure(scoring_workers=...); "
        "accepted: an integer >= 1"
    )
    assert _runtime.current is None


def test_a_file_named_by_the_environment_is_named_by_its_path(tmp_path: Path) -> None:
    other = tmp_path / "conf" / "staging.yaml"
    other.parent.mkdir()
    other.write_text("jsonl_backups: -1\n")
    with pytest.raises(tracesim.ConfigError) as info:
        resolve({}, environ={"TRACESIM_CONFIG_FILE": str(other)})
    assert info.value.source == str(other)
    assert f"got -1 from {other}; accepted: an integer >= 0" in str(info.value)
    assert "environment variable" not in str(info.value)


def test_a_bad_rule_in_the_file_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "tracesim.yaml"
    config.write_text("evaluators:\n  - {kind: robot, evaluators: [exact]}\n")
    with pytest.raises(
        tracesim.ConfigError, match=r"'evaluators\[0\]\.kind'.*got 'robot' from tracesim\.yaml;"
    ):
        tracesim.configure(exporters=[])
    config.write_text("evaluators:\n  - {match: x}\n  - {evaluators: [{type: levenshtien}]}\n")
    with pytest.raises(tracesim.ConfigError) as info:
        tracesim.configure(exporters=[])
    assert info.value.setting == "evaluators[0].evaluators"
    assert info.value.source == "tracesim.yaml"
    config.write_text("evaluators:\n  - {evaluators: [{type: levenshtien}]}\n")
    with pytest.raises(tracesim.ConfigError, match=r"from tracesim\.yaml; .*did you mean 'levenshtein'\?$"):
        tracesim.configure(exporters=[])
    with pytest.raises(tracesim.ConfigError) as in_code:  # the same rule in code names no file
        tracesim.configure(exporters=[], evaluators=[{"evaluators": [{"type": "levenshtien"}]}])
    assert in_code.value.source is None


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
    with pytest.raises(tracesim.ConfigError) as argument:  # given in code: no variable to blame
        resolve({}, environ={}, config_file=tmp_path / "missing.yaml")
    assert argument.value.setting == "config_file"
    assert argument.value.env_var is None


def test_every_setting_is_a_field_and_documented() -> None:
    fields = set(Settings.__dataclass_fields__)
    assert {s.name for s in SETTINGS} == fields
    for s in SETTINGS:
        assert s.doc
        assert s.accepted
        # tracesim's own, OpenTelemetry's, and MLflow's client variable for its experiment
        assert all(v.startswith(("TRACESIM_", "OTEL_")) or v == "MLFLOW_EXPERIMENT_ID" for v in s.env)


def test_every_setting_is_an_argument_of_configure() -> None:
    import inspect

    parameters = set(inspect.signature(tracesim.configure).parameters) - {"config_file"}
    assert parameters == {s.name for s in SETTINGS}


def test_prices_come_from_the_config_file_and_are_checked_field_by_field(tmp_path: Path) -> None:
    from tracesim._pricing import Price

    (tmp_path / "tracesim.yaml").write_text(
        "prices:\n"
        "  my-model: {input: 0.5, output: 1.5, cached_input: 0.05}\n"
        "  embed: {input: '0.02', output: 0}\n"
    )
    settings = resolve({}, environ={})
    assert settings.prices == {"my-model": Price(0.5, 1.5, 0.05), "embed": Price(0.02, 0.0)}
    assert resolve({"prices": {"x": {"input": 1, "output": 2}}}, environ={}).prices == {"x": Price(1.0, 2.0)}
    assert Settings().prices == {}  # the shipped table is not a setting: it is what prices merge over


@pytest.mark.parametrize(
    ("prices", "setting", "accepted"),
    [
        ({"gpt-4o": {"input": -1, "output": 2}}, "prices.gpt-4o.input", "a number >= 0"),
        ({"gpt-4o": {"input": 1, "output": "lots"}}, "prices.gpt-4o.output", "a number >= 0"),
        ({"gpt-4o": {"input": 1, "output": float("nan")}}, "prices.gpt-4o.output", "a number >= 0"),
        ({"gpt-4o": {"input": True, "output": 1}}, "prices.gpt-4o.input", "a number >= 0"),
        ({"gpt-4o": {"output": 1}}, "prices.gpt-4o.input", "input and output are required"),
        ({"gpt-4o": {"input": 1, "output": 1, "cached": 1}}, "prices.gpt-4o.cached", "only the keys"),
        ({"gpt-4o": [2.5, 10]}, "prices.gpt-4o", "a mapping {input: X"),
        ({"": {"input": 1, "output": 1}}, "prices", "non-empty strings"),
        (["gpt-4o"], "prices", "a mapping of model names"),
    ],
)
def test_a_bad_price_names_the_key_to_change(prices: object, setting: str, accepted: str) -> None:
    with pytest.raises(tracesim.ConfigError) as caught:
        resolve({"prices": prices}, environ={})
    assert caught.value.setting == setting
    assert accepted in caught.value.accepted
    assert f"invalid value for setting {setting!r}" in str(caught.value)


def test_a_bad_price_in_the_file_says_which_file(tmp_path: Path) -> None:
    (tmp_path / "tracesim.yaml").write_text("prices:\n  gpt-4o: {input: 1, output: -2}\n")
    with pytest.raises(tracesim.ConfigError, match=r"'prices\.gpt-4o\.output'.* from tracesim\.yaml"):
        resolve({}, environ={})


def test_resolve_setting_reads_one_setting(tmp_path: Path) -> None:
    from tracesim._config import resolve_setting

    config = tmp_path / "tracesim.yaml"
    config.write_text("prices:\n  m: {input: 1, output: 2}\nmax_value_chars: 1\n")  # the second is invalid
    assert set(resolve_setting("prices", environ={})) == {"m"}  # other settings are not checked
    with pytest.raises(tracesim.ConfigError, match="config_file"):
        resolve_setting("prices", tmp_path / "missing.yaml", environ={})
    assert resolve_setting("prices", environ={"TRACESIM_CONFIG_FILE": str(config)})["m"].output == 2.0


def test_a_misspelt_name_gets_a_suggestion(tmp_path: Path) -> None:
    from tracesim.evaluators import from_config

    with pytest.raises(tracesim.ConfigError, match=r"; did you mean 'levenshtein'\?$"):
        from_config({"type": "levenshtien"})
    with pytest.raises(tracesim.ConfigError, match=r"; did you mean 'threshold'\?$"):
        from_config({"type": "rouge", "treshold": 0.5})
    with pytest.raises(tracesim.ConfigError) as unrelated:
        from_config({"type": "zzz"})
    assert "did you mean" not in str(unrelated.value)
    (tmp_path / "tracesim.yaml").write_text("jsonl_pth: traces.jsonl\n")
    with pytest.raises(tracesim.ConfigError, match=r"from tracesim.yaml; .*did you mean 'jsonl_path'\?$"):
        tracesim.configure()


def test_mlflow_experiment_id_becomes_the_otlp_header() -> None:
    from tracesim.exporters._otlp import settings_headers

    settings = resolve({}, environ={"MLFLOW_EXPERIMENT_ID": "12"})
    assert settings.mlflow_experiment_id == "12"
    assert settings_headers(settings.otlp_headers, settings.mlflow_experiment_id) == {
        "x-mlflow-experiment-id": "12"
    }
    # the variables' headers are kept (the official exporter would read only ours)
    assert settings_headers(None, "3") is not None
    with pytest.raises(tracesim.ConfigError, match="mlflow_experiment_id"):
        resolve({"mlflow_experiment_id": "Default"}, environ={})
