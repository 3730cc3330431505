use linefold::{fill_with, wrap, wrap_with, Options};

#[test]
fn indents_count_towards_the_width() {
    let options = Options::new(10).initial_indent("* ").subsequent_indent("  ");
    assert_eq!(wrap_with("alpha beta gamma delta", &options), ["* alpha", "  beta", "  gamma", "  delta"]);
}

#[test]
fn initial_indent_only() {
    let options = Options::new(12).initial_indent("    ");
    assert_eq!(wrap_with("one two three four", &options), ["    one two", "three four"]);
}

#[test]
fn no_indent_without_words() {
    let options = Options::new(10).initial_indent("> ");
    assert!(wrap_with("   ", &options).is_empty());
}

#[test]
fn long_words_overflow_by_default() {
    assert_eq!(wrap("a supercalifragilistic word", 8), ["a", "supercalifragilistic", "word"]);
}

#[test]
fn break_words_cuts_long_words() {
    let options = Options::new(8).break_words(true);
    assert_eq!(wrap_with("a supercalifragilistic word", &options), ["a", "supercal", "ifragili", "stic", "word"]);
}

#[test]
fn break_words_respects_the_indent() {
    let options = Options::new(6).initial_indent("> ").subsequent_indent("> ").break_words(true);
    assert_eq!(wrap_with("abcdefghij", &options), ["> abcd", "> efgh", "> ij"]);
}

#[test]
fn break_words_with_an_indent_wider_than_the_line() {
    let options = Options::new(2).initial_indent("    ").break_words(true);
    assert_eq!(wrap_with("abc", &options), ["    a", "bc"]);
}

#[test]
fn fill_with_indents_each_paragraph() {
    let options = Options::new(11).initial_indent("- ").subsequent_indent("  ");
    assert_eq!(fill_with("one two three\n\nfour five", &options), "- one two\n  three\n\n- four five");
}
