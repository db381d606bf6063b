//! Chat templates: a conversation rendered into the prompt text exactly as transformers'
//! `apply_chat_template(..., tokenize=False)` renders it (jinja2 in transformers' immutable
//! sandbox), safely: a template reads nothing but the request and the documented globals, and
//! its work, recursion and output are bounded.
//!
//! The request is a JSON object: `{"messages": [...], "tools": [...]?, "documents": [...]?,
//! "add_generation_prompt": bool?, "continue_final_message": bool or field name?, ...}`; every
//! other key is a template variable (`bos_token`, `enable_thinking`, ...).

mod environment;
mod json;
mod llama_analysis;
mod llama_cpp;
mod methods;
mod objects;
mod python;
mod request;
mod time;

use crate::error::{Error, ErrorCode, ErrorKind};
use crate::file::GgufFile;
use crate::value::Value as MetaValue;

pub use environment::{FUEL, MAX_RECURSION};
pub use json::MAX_DEPTH as MAX_REQUEST_DEPTH;
pub use llama_cpp::Caps as LlamaCppCaps;

/// The key of a file's default chat template.
pub const TEMPLATE_KEY: &str = "tokenizer.chat_template";
/// The key listing a file's named templates (`tokenizer.chat_template.<name>`).
pub const TEMPLATE_NAMES_KEY: &str = "tokenizer.chat_templates";

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

/// A compiled chat template: parse once, render many times (from many threads at once).
pub struct ChatTemplate {
    env: minijinja::Environment<'static>,
    source: String,
    /// For llama.cpp's rendering, made at its first use: the template with llama.cpp's source
    /// patches (where one applies) and what its probes find.
    llama: std::sync::OnceLock<Result<llama_cpp::Setup, Error>>,
}

const NAME: &str = "chat_template";

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("bytes", &self.source.len())
            .finish()
    }
}

impl ChatTemplate {
    /// Compiles a template; a syntax error names its line and column.
    pub fn new(source: &str) -> Result<ChatTemplate, Error> {
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
        Ok(ChatTemplate {
            env,
            source: source.to_string(),
            llama: std::sync::OnceLock::new(),
        })
    }

    /// The template's source, as given.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders a request (JSON, see the module's documentation) as transformers does.
    pub fn render(&self, request: &[u8]) -> Result<String, Error> {
        self.render_with(request, &[])
    }

    /// Renders a request with default variables (`bos_token`, ...) that the request's own
    /// keys replace.
    pub fn render_with(
        &self,
        request: &[u8],
        defaults: &[(String, String)],
    ) -> Result<String, Error> {
        self.render_inner(request, defaults, false)
    }

    /// `render_with`; `llama` leaves `tools` and `documents` undefined where they are none,
    /// and `add_generation_prompt` where it is false, as llama.cpp passes them.
    fn render_inner(
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
            prepared.context = minijinja::Value::from_pairs(vars);
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

impl ChatTemplate {
    /// Renders a request as llama-server (llama.cpp v0.5.0's `common_chat_templates_apply`)
    /// prepares it: its fixes to the messages and its variables (see `llama_cpp.rs`), rendered
    /// by this engine. `bos_token`/`eos_token` are the vocabulary's (empty when the template
    /// was given without a file); the request's own keys replace them, as llama-server's
    /// `chat_template_kwargs` do. `strip_bos`/`strip_eos` drop the token's text from the start
    /// and end of the prompt, as llama.cpp does when the vocabulary adds the token itself.
    pub fn render_llama_cpp(
        &self,
        request: &[u8],
        bos_token: &str,
        eos_token: &str,
        strip_bos: bool,
        strip_eos: bool,
    ) -> Result<String, Error> {
        check_request_size(request)?;
        let setup = self.llama_cpp_setup()?;
        let t = setup.patched.as_deref().unwrap_or(self);
        let route = setup.route;
        let prepared = llama_cpp::prepare_request(
            request,
            &t.source,
            &setup.caps,
            route,
            bos_token,
            eos_token,
        )?;
        let mut out = t.render_inner(&prepared.request, &[], true)?;
        if route == llama_cpp::Route::GptOss && !prepared.add_generation_prompt {
            // The GPT-OSS handler ends a finished conversation's last turn as an open one.
            if let Some(at) = out.rfind("<|return|>") {
                out.replace_range(at..at + "<|return|>".len(), "<|end|>");
            }
        }
        if matches!(route, llama_cpp::Route::Gemma4 { .. })
            && prepared.add_generation_prompt
            && out.ends_with("<turn|>\n")
        {
            out.push_str("<|turn>model\n");
        }
        if let Some(c) = prepared.continued.as_ref().filter(|c| !c.empty) {
            let prompt = out.as_str();
            let added = || -> Result<String, Error> {
                let full = t.render_inner(&c.with_prompt, &[], true)?;
                let common = prompt
                    .char_indices()
                    .zip(full.chars())
                    .find(|((_, a), b)| a != b)
                    .map_or(prompt.len().min(full.len()), |((i, _), _)| i);
                Ok(full[common..].to_string())
            };
            let markers = || {
                setup
                    .reasoning
                    .get_or_init(|| llama_analysis::reasoning(t, &setup.caps))
                    .clone()
            };
            let text = llama_cpp::continuation(route, prompt, c, added, markers)?;
            out.push_str(&text);
        }
        if strip_bos && !bos_token.is_empty() && out.starts_with(bos_token) {
            out.drain(..bos_token.len());
        }
        if strip_eos && !eos_token.is_empty() && out.ends_with(eos_token) {
            out.truncate(out.len() - eos_token.len());
        }
        Ok(out)
    }

    /// What llama.cpp's probes would find the template reads, as this module measures it.
    pub fn llama_cpp_caps(&self) -> Result<LlamaCppCaps, Error> {
        Ok(self.llama_cpp_setup()?.caps)
    }

    fn llama_cpp_setup(&self) -> Result<&llama_cpp::Setup, Error> {
        let made = self.llama.get_or_init(|| {
            let patched = match llama_cpp::patched_source(&self.source) {
                Some(src) => Some(Box::new(ChatTemplate::new(&src)?)),
                None => None,
            };
            let t = patched.as_deref().unwrap_or(self);
            let caps = llama_cpp::caps(t);
            let route = llama_cpp::route(&t.source);
            Ok(llama_cpp::Setup {
                patched,
                caps,
                route,
                reasoning: std::sync::OnceLock::new(),
            })
        });
        match made {
            Ok(setup) => Ok(setup),
            Err(e) => Err(e.clone()),
        }
    }
}

/// Refuses a request longer than [`MAX_REQUEST_BYTES`] before anything reads it.
fn check_request_size(request: &[u8]) -> Result<(), Error> {
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

/// A minijinja error as the library's: the template's own message for `raise_exception`, the
/// limit reached, or what failed, with its line and column.
fn from_minijinja(e: &minijinja::Error, source: &str) -> ChatError {
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

/// Renders `template` over `request` as transformers does ([`ChatTemplate::render`]).
pub fn render_template(template: &str, request: &[u8]) -> Result<String, Error> {
    ChatTemplate::new(template)?.render(request)
}

/// The names of a file's chat templates: `None` for `tokenizer.chat_template` where the file
/// has it, then each `tokenizer.chat_template.<name>` present, in the order of
/// `tokenizer.chat_templates` and then of the file.
pub fn template_names<S: AsRef<[u8]>>(file: &GgufFile<S>) -> Vec<Option<String>> {
    let mut names = Vec::new();
    if matches!(file.get(TEMPLATE_KEY), Some(MetaValue::String(_))) {
        names.push(None);
    }
    let prefix = format!("{TEMPLATE_KEY}.");
    let mut seen: Vec<String> = Vec::new();
    if let Some(MetaValue::Array(a)) = file.get(TEMPLATE_NAMES_KEY) {
        if let Some(strings) = a.strings() {
            for s in strings {
                let name = String::from_utf8_lossy(s).into_owned();
                let key = format!("{prefix}{name}");
                if matches!(file.get(&key), Some(MetaValue::String(_))) && !seen.contains(&name) {
                    seen.push(name);
                }
            }
        }
    }
    for entry in file.metadata() {
        if let Some(rest) = entry.key.strip_prefix(prefix.as_bytes()) {
            if let (Ok(name), MetaValue::String(_)) = (std::str::from_utf8(rest), entry.value) {
                if !seen.iter().any(|s| s == name) {
                    seen.push(name.to_string());
                }
            }
        }
    }
    names.extend(seen.into_iter().map(Some));
    names
}

/// The source of a file's template: `None` for `tokenizer.chat_template`, else
/// `tokenizer.chat_template.<name>`.
pub fn file_template<S: AsRef<[u8]>>(
    file: &GgufFile<S>,
    name: Option<&str>,
) -> Result<String, Error> {
    let key = match name {
        None => TEMPLATE_KEY.to_string(),
        Some(n) => format!("{TEMPLATE_KEY}.{n}"),
    };
    match file.get(&key) {
        Some(MetaValue::String(bytes)) => match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => Err(Error::new(ErrorKind::TemplateSyntax {
                message: format!(
                    "{key} is not UTF-8 (byte {} of the template)",
                    e.valid_up_to()
                ),
            })),
        },
        Some(other) => Err(Error::msg(
            ErrorCode::WrongType,
            format!("{key} is a {}, not a STRING", other.value_type().name()),
        )),
        None => Err(Error::msg(
            ErrorCode::NotFound,
            format!("the file has no chat template {key}"),
        )),
    }
}

/// The special tokens' text a file's vocabulary names, as template variables (`bos_token`,
/// `eos_token`, `unk_token`, `sep_token`, `pad_token`, `cls_token`, `mask_token`), as
/// transformers passes its tokenizer's special tokens.
pub fn special_token_variables<S: AsRef<[u8]>>(file: &GgufFile<S>) -> Vec<(String, String)> {
    const KEYS: [(&str, &str); 7] = [
        ("bos_token", "tokenizer.ggml.bos_token_id"),
        ("eos_token", "tokenizer.ggml.eos_token_id"),
        ("unk_token", "tokenizer.ggml.unknown_token_id"),
        ("sep_token", "tokenizer.ggml.seperator_token_id"),
        ("pad_token", "tokenizer.ggml.padding_token_id"),
        ("cls_token", "tokenizer.ggml.cls_token_id"),
        ("mask_token", "tokenizer.ggml.mask_token_id"),
    ];
    let Some(MetaValue::Array(tokens)) = file.get("tokenizer.ggml.tokens") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (var, key) in KEYS {
        let Some(id) = file.get(key).and_then(|v| v.as_u64()) else {
            continue;
        };
        if id >= tokens.len() {
            continue;
        }
        let Ok(index) = usize::try_from(id) else {
            continue;
        };
        if let Some(text) = tokens.strings().and_then(|mut s| s.nth(index)) {
            out.push((var.to_string(), String::from_utf8_lossy(text).into_owned()));
        }
    }
    out
}

/// Renders a file's template (`name` as in [`file_template`]) with its special tokens as
/// defaults.
pub fn render_file<S: AsRef<[u8]>>(
    file: &GgufFile<S>,
    name: Option<&str>,
    request: &[u8],
) -> Result<String, Error> {
    let template = ChatTemplate::new(&file_template(file, name)?)?;
    template.render_with(request, &special_token_variables(file))
}

/// Renders a file's template as llama-server does ([`ChatTemplate::render_llama_cpp`]):
/// `bos_token`/`eos_token` from the vocabulary, and their text dropped from the prompt's ends
/// where the file sets `tokenizer.ggml.add_bos_token`/`add_eos_token` (the tokenizer adds them).
pub fn render_file_llama_cpp<S: AsRef<[u8]>>(
    file: &GgufFile<S>,
    name: Option<&str>,
    request: &[u8],
) -> Result<String, Error> {
    let template = ChatTemplate::new(&file_template(file, name)?)?;
    let special = special_token_variables(file);
    let token = |var: &str| {
        special
            .iter()
            .find(|(k, _)| k == var)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    let flag = |key: &str| matches!(file.get(key), Some(MetaValue::Bool(true)));
    template.render_llama_cpp(
        request,
        token("bos_token"),
        token("eos_token"),
        flag("tokenizer.ggml.add_bos_token"),
        flag("tokenizer.ggml.add_eos_token"),
    )
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

    #[test]
    fn columns_count_characters_from_the_line_start() {
        assert_eq!(column_of("ab\ncé{", 6), 3);
        assert_eq!(column_of("x", 0), 1);
    }
}
