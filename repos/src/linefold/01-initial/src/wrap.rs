/// Wraps `text` into lines of at most `width` columns.
///
/// Words are separated by any run of whitespace, line breaks included, and
/// joined by one space. A word longer than `width` gets a line of its own.
///
/// # Panics
///
/// When `width` is zero.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    assert!(width > 0, "linefold: the width must be at least 1");
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in words(text) {
        if line.is_empty() {
            line.push_str(word);
        } else if line.len() + 1 + word.len() < width {
            line.push(' ');
            line.push_str(word);
        } else {
            lines.push(std::mem::take(&mut line));
            line.push_str(word);
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_at_any_whitespace() {
        let found: Vec<&str> = words(" one\ttwo \n three  ").collect();
        assert_eq!(found, ["one", "two", "three"]);
    }

    #[test]
    fn no_words_in_blank_text() {
        assert_eq!(words(" \n\t ").count(), 0);
    }
}
