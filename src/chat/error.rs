//! Why a render failed ([`ChatError`]), and how it becomes the library's [`Error`]: minijinja's
//! errors with the template's line and column, the template's own `raise_exception` message,
//! the bounds reached, and the request's byte offsets.

use super::environment::{self, FUEL, MAX_RECURSION};
use crate::error::{Error, ErrorKind};

/// Why a render failed, before it becomes an [`Error`].
#[derive(Debug, Clone)]
pub(crate) enum ChatError {
    /// The template does not parse.
    Syntax {
        message: String,
        line: Option<usize>,
        column: Option<usize>,
    },
    /// Rendering failed: the template raised, or called what does not exist or is refused.
    Render {
        message: String,
        line: Option<usize>,
        column: Option<usize>,
    },
    /// A bound was reached.
    Limit { message: String },
    /// The request is malformed.
    Request {
        offset: Option<u64>,
        message: String,
    },
}

fn place(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("line {l}, column {c}: "),
        (Some(l), None) => format!("line {l}: "),
        _ => String::new(),
    }
}

impl From<ChatError> for Error {
    fn from(e: ChatError) -> Error {
        match e {
            ChatError::Syntax {
                message,
                line,
                column,
            } => Error::new(ErrorKind::TemplateSyntax {
                message: format!("{}{message}", place(line, column)),
            }),
            ChatError::Render {
                message,
                line,
                column,
            } => Error::new(ErrorKind::TemplateRender {
                message: format!("{}{message}", place(line, column)),
            }),
            ChatError::Limit { message } => Error::new(ErrorKind::TemplateLimit { message }),
            ChatError::Request { offset, message } => {
                let message = match offset {
                    Some(at) => format!("the request, byte {at}: {message}"),
                    None => format!("the request: {message}"),
                };
                Error::new(ErrorKind::BadRequest { message }).with_offset(offset)
            }
        }
    }
}

/// The column (1-based, in characters) of byte `at` of `source`.
fn column_of(source: &str, at: usize) -> usize {
    let at = at.min(source.len());
    let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    source
        .get(line_start..at)
        .map_or(1, |s| s.chars().count() + 1)
}

/// A minijinja error as the library's: the template's own message for `raise_exception`, the
/// limit reached, or what failed, with its line and column.
pub fn from_minijinja(e: &minijinja::Error, source: &str) -> ChatError {
    use std::error::Error as _;
    let line = e.line();
    let column = e.range().map(|r| column_of(source, r.start));
    let mut cause: Option<&(dyn std::error::Error + 'static)> = e.source();
    while let Some(c) = cause {
        if let Some(raised) = c.downcast_ref::<environment::Raised>() {
            return ChatError::Render {
                message: raised.0.clone(),
                line,
                column,
            };
        }
        cause = c.source();
    }
    let message = match e.detail() {
        Some(d) => format!("{}: {d}", e.kind()),
        None => e.kind().to_string(),
    };
    match e.kind() {
        minijinja::ErrorKind::SyntaxError => ChatError::Syntax {
            message,
            line,
            column,
        },
        minijinja::ErrorKind::OutOfFuel => ChatError::Limit {
            message: format!(
                "{}the template ran out of its {FUEL} units of work (a runaway loop?)",
                place(line, column)
            ),
        },
        _ if message.contains("recursion limit") => ChatError::Limit {
            message: format!(
                "{}templates may nest calls at most {MAX_RECURSION} deep ({message})",
                place(line, column)
            ),
        },
        _ => ChatError::Render {
            message,
            line,
            column,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_from_the_line_start() {
        assert_eq!(column_of("ab\ncé{", 6), 3);
        assert_eq!(column_of("x", 0), 1);
    }
}
