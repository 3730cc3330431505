//! Wrap plain text to a width, with nothing but the standard library.
//!
//! ```
//! let lines = linefold::wrap("The quick brown fox jumps over the lazy dog", 16);
//! assert_eq!(lines, ["The quick brown", "fox jumps over", "the lazy dog"]);
//! ```

mod wrap;

pub use wrap::wrap;
