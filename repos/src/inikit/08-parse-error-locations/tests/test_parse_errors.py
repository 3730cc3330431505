import pytest

import inikit
from inikit import Config, ParseError, parse


def error_of(call, *args):
    with pytest.raises(ParseError) as info:
        call(*args)
    return info.value


@pytest.mark.parametrize(
    "text, lineno",
    [
        ("[s]\na = 1\nnonsense\n", 3),
        ("\n# comment\nkey = outside\n", 3),
        ("[s]\na = 1\n\n; note\nA = 2\n", 5),
        ("[ok]\n[broken\n", 2),
        ("[s]\n= no name\n", 2),
    ],
    ids=["no-separator", "outside-section", "duplicate", "unterminated-header", "no-name"],
)
def test_line_numbers(text, lineno):
    err = error_of(parse, text)
    assert err.lineno == lineno
    assert err.filename == "<string>"
    assert str(err).startswith(f"<string>:{lineno}: ")


def test_message_still_says_what_is_wrong():
    err = error_of(Config.from_string, "[s]\nthis is not an option\n")
    assert "this is not an option" in str(err)
    assert str(err).startswith("<string>:2: ")


def test_loads_reports_string():
    err = error_of(inikit.loads, "[s]\nx = 1\nx = 2\n")
    assert (err.filename, err.lineno) == ("<string>", 3)


def test_load_reports_the_file(tmp_path):
    path = tmp_path / "app.ini"
    path.write_text("[server]\nhost = example.org\n\nport 8080\n")
    err = error_of(inikit.load, path)
    assert err.filename == str(path)
    assert err.lineno == 4
    assert str(err).startswith(f"{path}:4: ")


def test_load_reports_the_file_that_is_wrong(tmp_path):
    good = tmp_path / "good.ini"
    good.write_text("[s]\na = 1\n")
    bad = tmp_path / "bad.ini"
    bad.write_text("[s]\n[]\n")
    err = error_of(inikit.load, str(good), str(bad))
    assert (err.filename, err.lineno) == (str(bad), 2)


def test_windows_line_endings(tmp_path):
    path = tmp_path / "crlf.ini"
    path.write_bytes(b"[s]\r\na = 1\r\noops\r\n")
    assert error_of(inikit.load, path).lineno == 3
