use linefold::{fill, indent};

#[test]
fn fill_joins_lines() {
    assert_eq!(fill("one two three four five", 11), "one two\nthree four\nfive");
}

#[test]
fn fill_keeps_paragraphs() {
    let text = "First paragraph\nwith two lines.\n\n\n  \nSecond one.\n";
    assert_eq!(fill(text, 22), "First paragraph with\ntwo lines.\n\nSecond one.");
}

#[test]
fn fill_of_blank_text_is_empty() {
    assert_eq!(fill("\n \n\t\n", 10), "");
}

#[test]
fn indent_prefixes_lines() {
    assert_eq!(indent("a\nb\n", "    "), "    a\n    b\n");
}

#[test]
fn indent_skips_blank_lines() {
    assert_eq!(indent("a\n\n  \nb", "> "), "> a\n\n  \n> b");
}

#[test]
fn indent_keeps_crlf() {
    assert_eq!(indent("a\r\nb\r\n", "# "), "# a\r\n# b\r\n");
}
