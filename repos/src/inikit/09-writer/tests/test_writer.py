import pytest

import inikit
from inikit import Config

TEXT = """
[DEFAULT]
root = /srv

[app]
data = ${root}/data
url = http://example.org/#top
empty =
"""


def test_round_trip():
    config = Config.from_string(TEXT)
    again = inikit.loads(inikit.dumps(config))
    assert again.to_dict() == config.to_dict()
    assert again.get("app", "data") == "/srv/data"


def test_layout():
    config = Config({"b": {"x": "1"}, "a": {"Y": "2"}})
    assert inikit.dumps(config) == "[b]\nx = 1\n\n[a]\ny = 2\n"


def test_default_first_when_present():
    config = Config({"s": {"x": "1"}, "DEFAULT": {"d": "0"}})
    assert inikit.dumps(config).startswith("[DEFAULT]\nd = 0\n\n[s]\n")


@pytest.mark.parametrize(
    "value",
    [" padded", "two\nlines", "value  # not a comment", "a ;b"],
    ids=["leading-blank", "newline", "hash-comment", "semicolon-comment"],
)
def test_values_that_would_change_are_refused(value):
    with pytest.raises(ValueError):
        inikit.dumps(Config({"s": {"k": value}}))


def test_dump_to_file(tmp_path):
    path = tmp_path / "out.ini"
    inikit.dump(Config({"s": {"k": "v"}}), path)
    assert inikit.load(path).get("s", "k") == "v"
