import pytest

from inikit import Config, ConversionError, NoOptionError

TEXT = """
[DEFAULT]
debug = off

[app]
workers = 4
ratio = 0.75
debug = Yes
hosts = alpha, beta ,, gamma
paths = /usr/bin:/bin
name = demo
"""


@pytest.fixture
def config():
    return Config.from_string(TEXT)


def test_get_int(config):
    assert config.get_int("app", "workers") == 4


def test_get_float(config):
    assert config.get_float("app", "ratio") == 0.75


@pytest.mark.parametrize("raw, expected", [("1", True), ("YES", True), ("on", True), ("false", False), ("Off", False), ("0", False)])
def test_get_bool_states(raw, expected):
    config = Config({"s": {"flag": raw}})
    assert config.get_bool("s", "flag") is expected


def test_get_bool_through_default(config):
    assert config.get_bool("app", "debug") is True
    assert config.get_bool("DEFAULT", "debug") is False


def test_get_list(config):
    assert config.get_list("app", "hosts") == ["alpha", "beta", "gamma"]
    assert config.get_list("app", "paths", sep=":") == ["/usr/bin", "/bin"]


@pytest.mark.parametrize("getter", ["get_int", "get_float", "get_bool"])
def test_conversion_errors_name_the_option(config, getter):
    with pytest.raises(ConversionError, match=r"\[app\] name"):
        getattr(config, getter)("app", "name")
    with pytest.raises(ValueError):
        getattr(config, getter)("app", "name")


def test_fallback_only_for_missing_options(config):
    assert config.get_int("app", "missing", fallback=1) == 1
    assert config.get_int("nope", "missing", fallback=None) is None
    with pytest.raises(ConversionError):
        config.get_int("app", "name", fallback=1)
    with pytest.raises(NoOptionError):
        config.get_int("app", "missing")
