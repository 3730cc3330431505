use linefold::wrap;

#[test]
fn short_text_is_one_line() {
    assert_eq!(wrap("hello world", 40), ["hello world"]);
}

#[test]
fn wraps_at_word_boundaries() {
    assert_eq!(
        wrap("the rain in spain stays mainly in the plain", 15),
        ["the rain in", "spain stays", "mainly in the", "plain"]
    );
}

#[test]
fn whitespace_runs_are_one_space() {
    assert_eq!(wrap("a  b\t\tc\n\nd", 20), ["a b c d"]);
}

#[test]
fn empty_and_blank_text_have_no_lines() {
    assert!(wrap("", 10).is_empty());
    assert!(wrap("  \n ", 10).is_empty());
}

#[test]
fn long_words_get_their_own_line() {
    assert_eq!(
        wrap("see https://example.org/a/very/long/path now", 10),
        ["see", "https://example.org/a/very/long/path", "now"]
    );
}

#[test]
fn width_one_puts_every_word_on_a_line() {
    assert_eq!(wrap("a b c", 1), ["a", "b", "c"]);
}

#[test]
#[should_panic(expected = "the width must be at least 1")]
fn zero_width_panics() {
    wrap("text", 0);
}
