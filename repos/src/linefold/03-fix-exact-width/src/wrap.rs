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
        } else if line.len() + 1 + word.len() <= width {
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

/// Wraps every paragraph of `text` to `width` and joins the lines with line
/// breaks. Paragraphs are separated by blank lines (lines of whitespace only)
/// and stay separated by exactly one empty line.
///
/// # Panics
///
/// When `width` is zero.
pub fn fill(text: &str, width: usize) -> String {
    paragraphs(text)
        .iter()
        .map(|paragraph| wrap(paragraph, width).join("\n"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
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

    #[test]
    fn paragraphs_split_at_blank_lines() {
        assert_eq!(paragraphs("a\nb\n\n  \nc\n"), ["a\nb\n", "c\n"]);
        assert!(paragraphs("\n \n").is_empty());
    }
}
