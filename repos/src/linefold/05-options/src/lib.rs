//! Wrap, fill, indent and dedent plain text, with nothing but the standard
//! library.
//!
//! ```
//! let lines = linefold::wrap("The quick brown fox jumps over the lazy dog", 16);
//! assert_eq!(lines, ["The quick brown", "fox jumps over", "the lazy dog"]);
//!
//! let text = linefold::indent(&linefold::fill("one two three\n\nfour", 8), "> ");
//! assert_eq!(text, "> one two\n> three\n\n> four");
//!
//! let options = linefold::Options::new(12).initial_indent("- ").subsequent_indent("  ");
//! assert_eq!(linefold::wrap_with("buy milk, eggs and bread", &options), ["- buy milk,", "  eggs and", "  bread"]);
//! ```

mod indent;
mod wrap;

pub use indent::{dedent, indent};
pub use wrap::{fill, fill_with, wrap, wrap_with, Options};
