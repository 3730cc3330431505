import pytest

from inikit import Config, InterpolationError

TEXT = """
[DEFAULT]
base = /srv
log_dir = ${base}/log

[paths]
data = ${base}/data
cache = ${data}/cache
out = ${build:out}
log = ${log_dir}/paths.log

[build]
out = /tmp/build
jobs = ${workers}
workers = 4

[money]
price = $$5 or $6
odd = costs $ {x}
"""


@pytest.fixture
def config():
    return Config.from_string(TEXT)


def test_reference_to_default(config):
    assert config.get("paths", "data") == "/srv/data"


def test_nested_references(config):
    assert config.get("paths", "cache") == "/srv/data/cache"
    assert config.get("paths", "log") == "/srv/log/paths.log"


def test_reference_to_other_section(config):
    assert config.get("paths", "out") == "/tmp/build"


def test_dollar_signs(config):
    assert config.get("money", "price") == "$5 or $6"
    assert config.get("money", "odd") == "costs $ {x}"


def test_raw_value(config):
    assert config.get("paths", "cache", raw=True) == "${data}/cache"
    assert ("cache", "${data}/cache") in config.items("paths", raw=True)


def test_items_are_expanded(config):
    assert dict(config.items("paths"))["cache"] == "/srv/data/cache"


def test_typed_getters_expand(config):
    assert config.get_int("build", "jobs") == 4


def test_reference_names_are_case_insensitive():
    config = Config.from_string("[s]\nName = x\ngreeting = hello ${NAME}\n")
    assert config.get("s", "greeting") == "hello x"


@pytest.mark.parametrize(
    "value",
    ["${nope}", "${build:nope}", "${nosuch:base}", "${}", "${build:}"],
    ids=["missing-option", "missing-in-other-section", "missing-section", "empty", "empty-key"],
)
def test_bad_references(value):
    config = Config.from_string(f"[DEFAULT]\nbase = /srv\n[build]\nx = 1\n[s]\nv = {value}\n")
    with pytest.raises(InterpolationError):
        config.get("s", "v")
    assert config.get("s", "v", raw=True) == value


def test_fallback_is_not_expanded(config):
    assert config.get("paths", "missing", fallback="${base}") == "${base}"


SHADOWED = """
[DEFAULT]
root = /srv
logs = ${root}/logs

[app]
root = /opt/app
data = ${root}/data

[worker]
data = ${app:root}/queue
"""


@pytest.fixture
def shadowed():
    return Config.from_string(SHADOWED)


def test_section_option_shadows_default_in_references(shadowed):
    assert shadowed.get("app", "root") == "/opt/app"
    assert shadowed.get("app", "data") == "/opt/app/data"


def test_default_value_expands_in_reading_section(shadowed):
    assert shadowed.get("app", "logs") == "/opt/app/logs"
    assert shadowed.get("worker", "logs") == "/srv/logs"
    assert shadowed.get("DEFAULT", "logs") == "/srv/logs"


def test_reference_to_other_section_sees_its_override(shadowed):
    assert shadowed.get("worker", "data") == "/opt/app/queue"


def test_items_use_the_section_override(shadowed):
    assert dict(shadowed.items("app")) == {"root": "/opt/app", "data": "/opt/app/data", "logs": "/opt/app/logs"}
