"""The engines' typed settings (pipeline.engines.settings): the conf files' values and the models' defaults
are one, a run's fingerprint holds them as written, a bad value is refused where the engine section is read
(one line: the file, the field, the fix), and a run's settings cannot change once made."""

from __future__ import annotations

import json

import pytest
import yaml
from pydantic import ValidationError

from pipeline.config import CONF_DIR, ConfigError, engine_config
from pipeline.engines import ENGINES, fit_context, server_of
from pipeline.engines.settings import (
    ENGINE_NAMES,
    HfSettings,
    OpenAISettings,
    VllmSettings,
    engine_settings,
)
from pipeline.settings import RunSettings, compose_settings

MODELS = {"vllm": VllmSettings, "hf": HfSettings, "openai": OpenAISettings}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_each_conf_file_is_its_models_defaults_key_for_key(name: str) -> None:
    raw = yaml.safe_load((CONF_DIR / "engine" / f"{name}.yaml").read_text())
    typed = engine_settings(raw)
    assert type(typed) is MODELS[name] and typed == MODELS[name]()
    assert set(typed.model_dump()) - {"log_level"} == set(raw) - {"log_level"}
    assert set(ENGINES) == set(ENGINE_NAMES) == set(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_fingerprint_holds_the_settings_as_the_conf_file_writes_them(name: str) -> None:
    raw = yaml.safe_load((CONF_DIR / "engine" / f"{name}.yaml").read_text())
    serving = MODELS[name].SERVING_KEYS
    # What the runner hashed before the settings were typed: the file's own values, whole numbers whole.
    expected = {k: v for k, v in raw.items() if k != "log_level" and k not in serving}
    if expected.get("max_model_len") == "auto":
        expected["max_model_len"] = None
    record = engine_settings(raw).record()
    assert json.dumps(record, sort_keys=True) == json.dumps(expected, sort_keys=True)


@pytest.mark.parametrize(
    ("name", "override", "says"),
    [
        (
            "vllm",
            {"cpu_kvcache_space_gib": -1},
            r"^conf/engine/vllm\.yaml: cpu_kvcache_space_gib = -1: .*greater",
        ),
        ("vllm", {"save_every": 0}, r"^conf/engine/vllm\.yaml: save_every = 0: .*engine\.save_every="),
        ("openai", {"concurrency": 0}, r"^conf/engine/openai\.yaml: concurrency = 0: "),
        ("hf", {"dtype": "float8"}, r"^conf/engine/hf\.yaml: dtype = 'float8': "),
    ],
)
def test_a_bad_engine_value_is_refused_in_one_line_naming_file_and_field(
    name: str, override: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError, match=says) as e:
        engine_settings(engine_config(name, **override))
    assert "\n" not in str(e.value)


def test_a_misspelt_engine_key_from_the_command_line_is_refused_before_anything_runs() -> None:
    with pytest.raises(ConfigError, match=r"^conf/engine/vllm\.yaml: chunk_sise: not a setting of the vllm"):
        compose_settings("base", ["+engine.chunk_sise=8"])
    with pytest.raises(ConfigError, match=r"engine\.chunk_size="):
        compose_settings("base", ["engine.chunk_size=0"])


def test_run_settings_are_made_once_and_type_their_engine() -> None:
    settings = RunSettings(arm="base", engine=engine_config("hf", chunk_size=8))
    assert isinstance(settings.engine, HfSettings) and settings.engine.chunk_size == 8
    with pytest.raises(ValidationError):
        settings.part = "0/2"  # type: ignore[misc]
    assert compose_settings("base", part="1/2").part == (1, 2)


def test_a_per_model_server_and_a_fitted_context_are_new_settings() -> None:
    per_model = engine_settings(engine_config("openai", base_url={"base": "http://a:1", "trained": None}))
    assert (
        server_of(per_model, "base").base_url == "http://a:1"
        and server_of(per_model, "trained").base_url is None
    )
    assert isinstance(per_model.base_url, dict)  # the settings it came from are unchanged
    with pytest.raises(ConfigError, match="not for model 'other'; add other: <URL>"):
        server_of(per_model, "other")
    attached = server_of(per_model, "base")
    assert fit_context(attached, "no-such-model", 10) is attached  # an attached server has its own context
