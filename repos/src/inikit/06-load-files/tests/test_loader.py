import pytest

import inikit
from inikit import Config, ParseError


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_loads_is_from_string():
    text = "[s]\na = 1\n"
    assert inikit.loads(text).items("s") == Config.from_string(text).items("s")


def test_load_one_file(tmp_path):
    path = write(tmp_path / "app.ini", "[server]\nport = 8080\n")
    assert inikit.load(path).get_int("server", "port") == 8080
    assert inikit.load(str(path)).get("server", "port") == "8080"


def test_later_files_override(tmp_path):
    base = write(tmp_path / "base.ini", "[DEFAULT]\nlevel = info\n[server]\nhost = localhost\nport = 80\n")
    site = write(tmp_path / "site.ini", "[server]\nport = 8080\n[extra]\nx = 1\n")
    config = inikit.load(base, site)
    assert config.get("server", "host") == "localhost"
    assert config.get("server", "port") == "8080"
    assert config.get("extra", "level") == "info"
    assert config.sections() == ["server", "extra"]


def test_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "bom.ini"
    path.write_bytes("\ufeff[s]\nname = ok\n".encode("utf-8"))
    assert inikit.load(path).get("s", "name") == "ok"


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        inikit.load(tmp_path / "missing.ini")
    with pytest.raises(ParseError):
        inikit.load(write(tmp_path / "bad.ini", "[s]\nnot an option\n"))
    with pytest.raises(TypeError):
        inikit.load()


def test_update_merges():
    config = Config({"s": {"a": "1"}})
    config.update({"s": {"b": "2"}, "DEFAULT": {"c": "3"}})
    assert config.items("s") == [("a", "1"), ("b", "2"), ("c", "3")]
