//! Chat templates: a conversation rendered into the prompt text exactly as transformers'
//! `apply_chat_template(..., tokenize=False)` renders it (jinja2 in transformers' immutable
//! sandbox), safely: a template reads nothing but the request and the documented globals, and
//! its work, recursion and output are bounded.
//!
//! The request is a JSON object: `{"messages": [...], "tools": [...]?, "documents": [...]?,
//! "add_generation_prompt": bool?, "continue_final_message": bool or field name?, ...}`; every
//! other key is a template variable (`bos_token`, `enable_thinking`, ...).

mod environment;
mod error;
mod float;
mod json;
mod llama_analysis;
mod llama_caps;
mod llama_cpp;
mod map;
mod methods;
mod objects;
mod python;
mod request;
mod template;
mod time;

use crate::error::{Error, ErrorCode, ErrorKind};
use crate::file::GgufFile;
use crate::value::Value as MetaValue;

pub use environment::{FUEL, MAX_RECURSION};
pub use json::MAX_DEPTH as MAX_REQUEST_DEPTH;
pub use llama_caps::Caps as LlamaCppCaps;
pub use template::{MAX_OUTPUT_BYTES, MAX_REQUEST_BYTES, MAX_TEMPLATE_BYTES};

use template::{check_request_size, Compiled};

/// The key of a file's default chat template.
pub const TEMPLATE_KEY: &str = "tokenizer.chat_template";
/// The key listing a file's named templates (`tokenizer.chat_template.<name>`).
pub const TEMPLATE_NAMES_KEY: &str = "tokenizer.chat_templates";

/// A compiled chat template: parse once, render many times (from many threads at once).
pub struct ChatTemplate {
    compiled: Compiled,
    /// For llama.cpp's rendering, made at its first use: the template with llama.cpp's source
    /// patches (where one applies) and what its probes find.
    llama: std::sync::OnceLock<Result<llama_cpp::Setup, Error>>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("bytes", &self.compiled.source.len())
            .finish()
    }
}

impl ChatTemplate {
    /// Compiles a template; a syntax error names its line and column.
    pub fn new(source: &str) -> Result<ChatTemplate, Error> {
        Ok(ChatTemplate {
            compiled: Compiled::new(source)?,
            llama: std::sync::OnceLock::new(),
        })
    }

    /// The template's source, as given.
    pub fn source(&self) -> &str {
        &self.compiled.source
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
        self.compiled.render(request, defaults, false)
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
        let t = setup.patched.as_deref().unwrap_or(&self.compiled);
        let route = setup.route;
        let prepared = llama_cpp::prepare_request(
            request,
            &t.source,
            &setup.caps,
            route,
            bos_token,
            eos_token,
        )?;
        let mut out = t.render(&prepared.request, &[], true)?;
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
                let full = t.render(&c.with_prompt, &[], true)?;
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
            let patched = match llama_cpp::patched_source(&self.compiled.source) {
                Some(src) => Some(Box::new(Compiled::new(&src)?)),
                None => None,
            };
            let t = patched.as_deref().unwrap_or(&self.compiled);
            let caps = llama_caps::caps(t);
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
