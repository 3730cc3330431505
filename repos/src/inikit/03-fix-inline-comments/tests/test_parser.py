import pytest

from inikit import ParseError, parse


def test_sections_and_options():
    text = """
[server]
host = example.org
port: 8080

[client]
retries = 3
"""
    assert parse(text) == {
        "server": {"host": "example.org", "port": "8080"},
        "client": {"retries": "3"},
    }


def test_option_names_are_lower_cased_and_stripped():
    assert parse("[s]\n  Max_Size   =   10  \n") == {"s": {"max_size": "10"}}


def test_first_separator_wins():
    assert parse("[s]\nexpr = a=b:c\n") == {"s": {"expr": "a=b:c"}}
    assert parse("[s]\ntime: 12:30\n") == {"s": {"time": "12:30"}}


def test_empty_value():
    assert parse("[s]\nname =\n") == {"s": {"name": ""}}


def test_comments_and_blank_lines_are_skipped():
    text = "# leading comment\n; another\n\n[s]\n   # indented comment\nkey = value\n"
    assert parse(text) == {"s": {"key": "value"}}


@pytest.mark.parametrize(
    "line",
    ["port = 8080 # default", "port = 8080\t; default", "port = 8080   #"],
    ids=["hash", "tab-semicolon", "bare-marker"],
)
def test_inline_comments(line):
    assert parse(f"[s]\n{line}\n") == {"s": {"port": "8080"}}


@pytest.mark.parametrize(
    "value",
    [
        "http://example.org/docs#install",
        "s3cr;et",
        "C#",
        "a;b;c",
    ],
    ids=["url-fragment", "password", "language", "list"],
)
def test_markers_inside_values_are_kept(value):
    assert parse(f"[s]\nkey = {value}\n") == {"s": {"key": value}}


def test_inline_comment_after_value_with_marker():
    text = "[s]\nurl = http://example.org/#top   # the home page\nsep = a;b ; two items\n"
    assert parse(text) == {"s": {"url": "http://example.org/#top", "sep": "a;b"}}


def test_repeated_section_is_merged():
    assert parse("[s]\na = 1\n[t]\n[s]\nb = 2\n") == {"s": {"a": "1", "b": "2"}, "t": {}}


def test_section_names_keep_case_and_inner_spaces():
    assert list(parse("[Web Server]\n")) == ["Web Server"]


@pytest.mark.parametrize(
    "text",
    [
        "key = value\n",  # outside of a section
        "[s]\njust words\n",
        "[s]\n= value\n",
        "[s\nkey = value\n",
        "[]\n",
        "[s]\nkey = 1\nKEY = 2\n",
    ],
    ids=["outside-section", "no-separator", "no-name", "unterminated-header", "empty-header", "duplicate"],
)
def test_malformed_input(text):
    with pytest.raises(ParseError):
        parse(text)
