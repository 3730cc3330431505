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

#[test]
fn a_line_may_fill_the_width_exactly() {
    assert_eq!(wrap("aaa bbb", 7), ["aaa bbb"]);
    assert_eq!(wrap("aaa bbb ccc", 7), ["aaa bbb", "ccc"]);
}

#[test]
fn exact_width_in_longer_text() {
    assert_eq!(
        wrap("The quick brown fox jumps over the lazy dog", 15),
        ["The quick brown", "fox jumps over", "the lazy dog"]
    );
}

#[test]
fn no_line_is_wider_than_the_width() {
    let text = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor";
    for width in 11..40 {
        let lines = wrap(text, width);
        for line in &lines {
            assert!(line.len() <= width, "{:?} is wider than {}", line, width);
        }
        // Greedy: the first word of a line did not fit on the line before.
        for pair in lines.windows(2) {
            let first = pair[1].split(' ').next().unwrap();
            assert!(pair[0].len() + 1 + first.len() > width, "{:?} could take {:?} at width {}", pair[0], first, width);
        }
    }
}

#[test]
fn single_letters_at_width_three() {
    assert_eq!(wrap("a b c d e", 3), ["a b", "c d", "e"]);
}
