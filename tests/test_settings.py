"""Settings from the environment: types, validation with every problem listed, secrets kept out of reprs."""

from __future__ import annotations

import pytest

from berth.core.errors import ConfigError
from berth.settings import ENV, Settings, from_env


def test_no_environment_gives_the_defaults() -> None:
    assert from_env({"PATH": "/bin"}) == Settings()


@pytest.mark.parametrize(
    ("env", "group", "attr", "want"),
    [
        ({"BERTH_TOP_NODES": "0"}, "service", "top_nodes", 0),
        ({"BERTH_GC_THAW_EVERY": "250000"}, "service", "gc_thaw_every", 250_000),
        ({"BERTH_REDIS_TLS": "yes"}, "redis", "tls", True),
        ({"BERTH_KAFKA_SESSION_TIMEOUT_MS": "6000"}, "kafka", "session_timeout_ms", 6000),
        ({"BERTH_REDIS_RIDE_OUT_SECONDS": "8"}, "redis", "ride_out_seconds", 8),
        ({"BERTH_KAFKA_FETCH_MAX_WAIT_MS": "40"}, "kafka", "fetch_max_wait_ms", 40),
        ({"BERTH_KAFKA_HEARTBEAT_INTERVAL_MS": "2000"}, "kafka", "heartbeat_interval_ms", 2000),
        (
            {"BERTH_KAFKA_GROUP_INSTANCE_ID": "berth-scorer-7d9f-x2"},
            "kafka",
            "group_instance_id",
            "berth-scorer-7d9f-x2",
        ),
    ],
)
def test_values_are_read_as_their_type(env: dict[str, str], group: str, attr: str, want: object) -> None:
    assert getattr(getattr(from_env(env), group), attr) == want


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"BERTH_GC_THAW_EVERY": "10"}, "BERTH_GC_THAW_EVERY: must be 1000 or more, got 10"),
        ({"BERTH_GC_THAW_EVERY": "often"}, "BERTH_GC_THAW_EVERY: want an integer, got 'often'"),
        ({"BERTH_TOP_NODES": "-1"}, "BERTH_TOP_NODES: must be 0 or more, got -1"),
        ({"BERTH_REDIS_RIDE_OUT_SECONDS": "0"}, "BERTH_REDIS_RIDE_OUT_SECONDS: must be 1-600, got 0"),
        ({"BERTH_REDIS_RIDE_OUT_SECONDS": "601"}, "BERTH_REDIS_RIDE_OUT_SECONDS: must be 1-600, got 601"),
        ({"BERTH_KAFKA_FETCH_MAX_WAIT_MS": "0"}, "BERTH_KAFKA_FETCH_MAX_WAIT_MS: must be 1-10000, got 0"),
        ({"BERTH_KAFKA_SESSION_TIMEOUT_MS": "3000"}, "BERTH_KAFKA_SESSION_TIMEOUT_MS: must be 6000-1800000, got 3000"),
        (
            {"BERTH_KAFKA_SESSION_TIMEOUT_MS": "1800001"},
            "BERTH_KAFKA_SESSION_TIMEOUT_MS: must be 6000-1800000, got 1800001",
        ),
        *(
            (
                {"BERTH_KAFKA_SESSION_TIMEOUT_MS": "6000", "BERTH_KAFKA_HEARTBEAT_INTERVAL_MS": bad},
                f"BERTH_KAFKA_HEARTBEAT_INTERVAL_MS: must be at least 1 and below the session timeout (6000), got {bad}",
            )
            for bad in ("0", "6000")
        ),
        *(
            (
                {"BERTH_KAFKA_GROUP_INSTANCE_ID": bad},
                f"BERTH_KAFKA_GROUP_INSTANCE_ID: want at most 249 of a-z, A-Z, 0-9, '.', '_' and '-', got {bad!r}",
            )
            for bad in ("scorer 0", "..", "x" * 250, "scorer/0")
        ),
        ({"BERTH_TOP_NODE": "5"}, "BERTH_TOP_NODE: not a berth setting"),
    ],
)
def test_bad_values_are_named(env: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigError) as e:
        from_env(env)
    assert problem in str(e.value)


def test_every_problem_is_listed_at_once() -> None:
    with pytest.raises(ConfigError) as e:
        from_env({"BERTH_GC_THAW_EVERY": "1", "BERTH_TOP_NODES": "-2"})
    assert "BERTH_GC_THAW_EVERY" in str(e.value) and "BERTH_TOP_NODES" in str(e.value)


def test_secrets_stay_out_of_reprs() -> None:
    settings = from_env({"BERTH_KAFKA_SASL_PASSWORD": "hunter2"})
    assert "hunter2" not in repr(settings)
    assert settings.kafka.sasl_password.value == "hunter2"


def test_every_variable_names_a_real_field() -> None:
    defaults = Settings()
    for name, (group, attr) in ENV.items():
        assert hasattr(getattr(defaults, group), attr), name
