//! Wrap, fill, indent and dedent plain text, with nothing but the standard library.
//!
//! ```
//! let lines = linefold::wrap("The quick brown fox jumps over the lazy dog", 16);
//! assert_eq!(lines, ["The quick brown", "fox jumps over", "the lazy dog"]);
//!
//! let text = linefold::indent(&linefold::fill("one two three\n\nfour", 8), "> ");
//! assert_eq!(text, "> one two\n> three\n\n> four");
//! ```

mod indent;
mod wrap;

pub use indent::{dedent, indent};
pub use wrap::{fill, wrap};
