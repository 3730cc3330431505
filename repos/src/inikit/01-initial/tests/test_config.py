import pytest

from inikit import Config, NoOptionError, NoSectionError

TEXT = """
[DEFAULT]
timeout = 30
user = guest

[server]
host = example.org
user = admin

[client]
"""


@pytest.fixture
def config():
    return Config.from_string(TEXT)


def test_sections_exclude_default(config):
    assert config.sections() == ["server", "client"]
    assert "server" in config
    assert "DEFAULT" not in config
    assert list(config) == ["server", "client"]


def test_get_own_option(config):
    assert config.get("server", "host") == "example.org"


def test_get_is_case_insensitive_for_options(config):
    assert config.get("server", "HOST") == "example.org"


def test_section_overrides_default(config):
    assert config.get("server", "user") == "admin"
    assert config.get("client", "user") == "guest"


def test_default_section_itself(config):
    assert config.get("DEFAULT", "timeout") == "30"


def test_options_and_items(config):
    assert config.options("server") == ["host", "user", "timeout"]
    assert config.items("client") == [("timeout", "30"), ("user", "guest")]


def test_has_option(config):
    assert config.has_option("server", "timeout")
    assert not config.has_option("server", "nope")
    assert not config.has_option("nope", "timeout")


def test_missing_option_and_section(config):
    with pytest.raises(NoOptionError):
        config.get("server", "nope")
    with pytest.raises(NoSectionError):
        config.get("nope", "host")
    with pytest.raises(LookupError):
        config.get("nope", "host")


def test_fallback(config):
    assert config.get("server", "nope", fallback="x") == "x"
    assert config.get("nope", "host", fallback=None) is None


def test_set_creates_section():
    config = Config()
    config.set("new", "Key", "v")
    assert config.get("new", "key") == "v"
    with pytest.raises(TypeError):
        config.set("new", "n", 3)
