/// How to wrap: the width and what to do at the start of lines and with
/// words that are too long. `Options::new(width)` has no indents and does
/// not break words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options<'a> {
    /// The widest a line may be, in columns, indent included.
    pub width: usize,
    /// Put before the first line.
    pub initial_indent: &'a str,
    /// Put before every line but the first.
    pub subsequent_indent: &'a str,
    /// Cut words longer than a line into pieces (default: give them a line of
    /// their own, wider than `width`).
    pub break_words: bool,
}

impl<'a> Options<'a> {
    pub fn new(width: usize) -> Self {
        Options { width, initial_indent: "", subsequent_indent: "", break_words: false }
    }

    pub fn initial_indent(mut self, indent: &'a str) -> Self {
        self.initial_indent = indent;
        self
    }

    pub fn subsequent_indent(mut self, indent: &'a str) -> Self {
        self.subsequent_indent = indent;
        self
    }

    pub fn break_words(mut self, yes: bool) -> Self {
        self.break_words = yes;
        self
    }
}

/// Wraps `text` into lines of at most `width` columns.
///
/// Words are separated by any run of whitespace, line breaks included, and
/// joined by one space. A word longer than `width` gets a line of its own.
///
/// # Panics
///
/// When `width` is zero.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    wrap_with(text, &Options::new(width))
}

/// Wraps `text` as `options` say (see [`wrap`]).
///
/// With `break_words`, a word that does not fit on a line of its own is cut
/// after as many columns as the line has room for (at least one), and the
/// rest continues on the next line.
///
/// # Panics
///
/// When `options.width` is zero.
pub fn wrap_with(text: &str, options: &Options) -> Vec<String> {
    assert!(options.width > 0, "linefold: the width must be at least 1");
    let width = options.width;
    let mut lines = Vec::new();
    let mut line = String::from(options.initial_indent);
    let mut has_words = false;
    for word in words(text) {
        let mut word = word;
        loop {
            if has_words {
                if columns(&line) + 1 + columns(word) <= width {
                    line.push(' ');
                    line.push_str(word);
                    break;
                }
                lines.push(std::mem::replace(&mut line, options.subsequent_indent.to_string()));
                has_words = false;
            }
            let room = width.saturating_sub(columns(&line)).max(1);
            if options.break_words && columns(word) > room {
                let (head, tail) = split_at_column(word, room);
                line.push_str(head);
                lines.push(std::mem::replace(&mut line, options.subsequent_indent.to_string()));
                word = tail;
                continue;
            }
            line.push_str(word);
            has_words = true;
            break;
        }
    }
    if has_words {
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
    fill_with(text, &Options::new(width))
}

/// Like [`fill`], with `options` for every paragraph: each paragraph's first
/// line gets the initial indent.
///
/// # Panics
///
/// When `options.width` is zero.
pub fn fill_with(text: &str, options: &Options) -> String {
    paragraphs(text)
        .iter()
        .map(|paragraph| wrap_with(paragraph, options).join("\n"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// How many columns `s` takes: one per `char` (see the README).
fn columns(s: &str) -> usize {
    s.chars().count()
}

/// Splits `word` after `n` columns, on a character boundary.
fn split_at_column(word: &str, n: usize) -> (&str, &str) {
    match word.char_indices().nth(n) {
        Some((at, _)) => word.split_at(at),
        None => (word, ""),
    }
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

    #[test]
    fn options_builder() {
        let options = Options::new(20).initial_indent("* ").subsequent_indent("  ").break_words(true);
        assert_eq!(
            options,
            Options { width: 20, initial_indent: "* ", subsequent_indent: "  ", break_words: true }
        );
    }
}
