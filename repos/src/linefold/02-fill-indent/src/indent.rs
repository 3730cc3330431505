/// Puts `prefix` before every line of `text` that is not blank. Blank lines
/// (whitespace only) are left as they are, so that no trailing whitespace is
/// added. Line endings are kept.
pub fn indent(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in split_keeping_ends(text) {
        if !line.trim().is_empty() {
            out.push_str(prefix);
        }
        out.push_str(line);
    }
    out
}

/// The lines of `text`, each with its line ending ("\n" or "\r\n") if it has
/// one.
pub(crate) fn split_keeping_ends(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_line_endings() {
        let lines: Vec<&str> = split_keeping_ends("a\nb\r\n\nc").collect();
        assert_eq!(lines, ["a\n", "b\r\n", "\n", "c"]);
    }

    #[test]
    fn split_of_empty_text() {
        assert_eq!(split_keeping_ends("").count(), 0);
    }
}
