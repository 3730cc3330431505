use linefold::{dedent, indent};

#[test]
fn dedent_removes_the_common_indentation() {
    assert_eq!(dedent("    a\n      b\n    c\n"), "a\n  b\nc\n");
}

#[test]
fn dedent_ignores_blank_lines() {
    assert_eq!(dedent("\n    a\n  \n    b"), "\na\n\nb");
}

#[test]
fn dedent_keeps_crlf() {
    assert_eq!(dedent("  a\r\n  b\r\n"), "a\r\nb\r\n");
}

#[test]
fn dedent_does_not_equate_tabs_and_spaces() {
    assert_eq!(dedent("\ta\n    b\n"), "\ta\n    b\n");
    assert_eq!(dedent("\t  a\n\t b\n"), " a\nb\n");
}

#[test]
fn dedent_without_indentation_changes_nothing() {
    assert_eq!(dedent("a\n  b"), "a\n  b");
    assert_eq!(dedent(""), "");
}

#[test]
fn dedent_then_indent() {
    let text = "      fn main() {\n          run();\n      }\n";
    assert_eq!(indent(&dedent(text), "  "), "  fn main() {\n      run();\n  }\n");
}
