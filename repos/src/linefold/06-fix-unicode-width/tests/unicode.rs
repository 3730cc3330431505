//! Widths are counted in characters, not bytes (README: "A column is one
//! character").

use linefold::{fill, wrap, wrap_with, Options};

#[test]
fn accented_letters_are_one_column() {
    assert_eq!(wrap("naïve café au lait", 10), ["naïve café", "au lait"]);
}

#[test]
fn other_scripts() {
    assert_eq!(wrap("Съешь же ещё этих мягких булок", 12), ["Съешь же ещё", "этих мягких", "булок"]);
    assert_eq!(wrap("αβγ δεζ ηθι", 7), ["αβγ δεζ", "ηθι"]);
}

#[test]
fn emoji_are_one_column_each() {
    assert_eq!(wrap("🦀🦀 🦀🦀 🦀", 5), ["🦀🦀 🦀🦀", "🦀"]);
}

#[test]
fn fill_counts_characters() {
    assert_eq!(fill("Grüße aus Köln\n\nÀ bientôt", 9), "Grüße aus\nKöln\n\nÀ bientôt");
}

#[test]
fn break_words_cuts_between_characters() {
    let options = Options::new(3).break_words(true);
    assert_eq!(wrap_with("ééééé", &options), ["ééé", "éé"]);
    assert_eq!(wrap_with("añoañoaño", &options), ["año", "año", "año"]);
}

#[test]
fn break_words_with_emoji() {
    let options = Options::new(2).break_words(true);
    assert_eq!(wrap_with("🦀🦀🦀", &options), ["🦀🦀", "🦀"]);
}

#[test]
fn non_ascii_indents() {
    let options = Options::new(9).initial_indent("» ").subsequent_indent("  ");
    assert_eq!(wrap_with("one two three", &options), ["» one two", "  three"]);
}

#[test]
fn ascii_is_unchanged() {
    assert_eq!(wrap("the rain in spain stays mainly in the plain", 15), ["the rain in", "spain stays", "mainly in the", "plain"]);
}
