//! A template compiled once and rendered many times (from many threads at once): the template
//! in its own environment, a request rendered as transformers renders it, and the bounds on
//! what a template and a request may be and a render may write.

use super::environment;
use super::error::{from_minijinja, ChatError};
use super::json;
use super::map;
use super::objects;
use super::request;
use crate::error::Error;

/// The largest template compiled (bytes): the largest real template is about 20 KiB.
pub const MAX_TEMPLATE_BYTES: usize = 1 << 20;
/// The largest request read (bytes).
pub const MAX_REQUEST_BYTES: usize = 64 << 20;

/// The most text one render may write (bytes): far beyond any prompt (a million-token
/// conversation is a few MiB).
pub const MAX_OUTPUT_BYTES: usize = 64 << 20;

/// The rendered text, refused past [`MAX_OUTPUT_BYTES`].
struct CappedOutput {
    text: Vec<u8>,
    over: bool,
}

impl std::io::Write for CappedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.text.len() + buf.len() > MAX_OUTPUT_BYTES {
            self.over = true;
            return Err(std::io::Error::other("the output limit is reached"));
        }
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// transformers' `{% generation %}` ... `{% endgeneration %}` (its assistant-mask extension)
/// renders its body unchanged when no mask is asked for: each tag becomes an `if true` /
/// `endif` of the same length, so that lines and columns of errors stay the template's own.
/// Comments and raw blocks are left alone.
fn rewrite_generation_tags(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let mut copied = 0;
    let mut in_raw = false;
    while i + 1 < b.len() {
        if b[i] == b'{' && b[i + 1] == b'#' && !in_raw {
            match source[i + 2..].find("#}") {
                Some(end) => i = i + 2 + end + 2,
                None => break,
            }
            continue;
        }
        if b[i] == b'{' && b[i + 1] == b'%' {
            let Some(end) = source[i + 2..].find("%}") else {
                break;
            };
            let inner_start = i + 2;
            let inner_end = i + 2 + end;
            let inner = &source[inner_start..inner_end];
            let body = inner.trim_start_matches(['-', '+']);
            let body = body.trim_end_matches(['-', '+']);
            let word = body.trim();
            if in_raw {
                in_raw = word != "endraw";
            } else if word == "raw" {
                in_raw = true;
            } else if word == "generation" || word == "endgeneration" {
                let lead = inner.len() - inner.trim_start_matches(['-', '+']).len();
                let trail = inner.len() - inner.trim_end_matches(['-', '+']).len();
                let replacement = if word == "generation" {
                    "if true"
                } else {
                    "endif"
                };
                let width = inner.len() - lead - trail;
                out.push_str(&source[copied..inner_start + lead]);
                out.push(' ');
                out.push_str(replacement);
                for _ in 0..width.saturating_sub(replacement.len() + 1) {
                    out.push(' ');
                }
                copied = inner_end - trail;
            }
            i = inner_end + 2;
            continue;
        }
        i += 1;
    }
    out.push_str(&source[copied..]);
    out
}

/// Refuses a request longer than [`MAX_REQUEST_BYTES`] before anything reads it.
pub fn check_request_size(request: &[u8]) -> Result<(), Error> {
    if request.len() > MAX_REQUEST_BYTES {
        return Err(ChatError::Limit {
            message: format!(
                "the request is {} bytes, more than the {MAX_REQUEST_BYTES} a request may have",
                request.len()
            ),
        }
        .into());
    }
    Ok(())
}

/// The name the template has in its environment.
const NAME: &str = "chat_template";

/// A compiled template.
pub struct Compiled {
    env: minijinja::Environment<'static>,
    /// The template's source, as given.
    pub source: String,
}

impl Compiled {
    /// Compiles a template; a syntax error names its line and column.
    pub fn new(source: &str) -> Result<Compiled, Error> {
        if source.len() > MAX_TEMPLATE_BYTES {
            return Err(ChatError::Limit {
                message: format!(
                    "the template is {} bytes, more than the {MAX_TEMPLATE_BYTES} a template may have",
                    source.len()
                ),
            }
            .into());
        }
        let mut env = environment::new();
        let rewritten = rewrite_generation_tags(source);
        env.add_template_owned(NAME, rewritten.clone())
            .map_err(|e| from_minijinja(&e, &rewritten))?;
        Ok(Compiled {
            env,
            source: source.to_string(),
        })
    }

    /// Renders a request with default variables (`bos_token`, ...) that the request's own
    /// keys replace, as transformers does; `llama` leaves `tools` and `documents` undefined
    /// where they are none, and `add_generation_prompt` where it is false, as llama.cpp passes
    /// them.
    pub fn render(
        &self,
        request: &[u8],
        defaults: &[(String, String)],
        llama: bool,
    ) -> Result<String, Error> {
        check_request_size(request)?;
        let value = json::parse(request).map_err(|e| ChatError::Request {
            offset: Some(e.offset),
            message: e.message,
        })?;
        let mut prepared = request::prepare(&value, &self.source, defaults)?;
        if llama {
            let mut vars = Vec::new();
            for k in prepared
                .context
                .try_iter()
                .map_err(|e| from_minijinja(&e, &self.source))?
            {
                let v = prepared
                    .context
                    .get_item(&k)
                    .map_err(|e| from_minijinja(&e, &self.source))?;
                let unset = match k.as_str() {
                    Some("tools" | "documents") => objects::is_none(&v),
                    Some("add_generation_prompt") => !v.is_true(),
                    _ => false,
                };
                if !unset {
                    vars.push((k, v));
                }
            }
            prepared.context = map::value(vars, None);
        }
        let template = self
            .env
            .get_template(NAME)
            .map_err(|e| from_minijinja(&e, &self.source))?;
        // A prompt is about as long as the request and the template together.
        let mut out = CappedOutput {
            text: Vec::with_capacity((request.len() + self.source.len()).min(MAX_OUTPUT_BYTES)),
            over: false,
        };
        let result = template.render_captured_to(prepared.context.clone(), &mut out);
        if out.over {
            return Err(ChatError::Limit {
                message: format!(
                    "the template writes more than the {MAX_OUTPUT_BYTES} bytes a render may write"
                ),
            }
            .into());
        }
        result.map_err(|e| from_minijinja(&e, &self.source))?;
        // The engine writes only whole `str`s.
        let rendered = String::from_utf8(out.text).map_err(|_| ChatError::Render {
            message: "the output is not UTF-8".into(),
            line: None,
            column: None,
        })?;
        Ok(prepared.finish(rendered)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_tags_keep_their_length_and_control_markers() {
        let src = "a{%- generation -%}b{% endgeneration %}{# {% generation %} #}";
        let out = rewrite_generation_tags(src);
        assert_eq!(out.len(), src.len());
        assert_eq!(
            out,
            "a{%- if true    -%}b{% endif         %}{# {% generation %} #}"
        );
        let raw = "{% raw %}{% generation %}{% endraw %}";
        assert_eq!(rewrite_generation_tags(raw), raw);
    }
}
