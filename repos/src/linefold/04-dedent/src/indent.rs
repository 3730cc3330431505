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

/// Removes the leading whitespace that every line of `text` that is not blank
/// starts with. Blank lines do not count and become empty lines (keeping their
/// line ending). Only the exact common prefix is removed: a tab and spaces are
/// not equal, whatever a tab's width is.
pub fn dedent(text: &str) -> String {
    let common = common_indent(text);
    let mut out = String::with_capacity(text.len());
    for line in split_keeping_ends(text) {
        let (body, ending) = split_ending(line);
        if body.trim().is_empty() {
            out.push_str(ending);
        } else {
            out.push_str(&body[common..]);
            out.push_str(ending);
        }
    }
    out
}

/// The length in bytes of the longest whitespace prefix that all lines that
/// are not blank share.
fn common_indent(text: &str) -> usize {
    let mut common: Option<&str> = None;
    for line in split_keeping_ends(text) {
        let (body, _) = split_ending(line);
        if body.trim().is_empty() {
            continue;
        }
        let indent = &body[..body.len() - body.trim_start().len()];
        common = Some(match common {
            None => indent,
            Some(prefix) => {
                let shared = prefix
                    .char_indices()
                    .zip(indent.chars())
                    .find(|((_, a), b)| a != b)
                    .map_or(prefix.len().min(indent.len()), |((i, _), _)| i);
                &prefix[..shared]
            }
        });
    }
    common.map_or(0, str::len)
}

/// Splits a line into its body and its line ending ("", "\n" or "\r\n").
fn split_ending(line: &str) -> (&str, &str) {
    if let Some(body) = line.strip_suffix("\r\n") {
        (body, &line[body.len()..])
    } else if let Some(body) = line.strip_suffix('\n') {
        (body, &line[body.len()..])
    } else {
        (line, "")
    }
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

    #[test]
    fn common_indent_of_lines() {
        assert_eq!(common_indent("    a\n  b\n      c"), 2);
        assert_eq!(common_indent("\t\ta\n\tb"), 1);
        assert_eq!(common_indent("  a\n\tb"), 0);
        assert_eq!(common_indent("\n   \n"), 0);
    }

    #[test]
    fn line_endings() {
        assert_eq!(split_ending("a\r\n"), ("a", "\r\n"));
        assert_eq!(split_ending("a\n"), ("a", "\n"));
        assert_eq!(split_ending("a"), ("a", ""));
    }
}
