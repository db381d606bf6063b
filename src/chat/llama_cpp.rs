//! llama-server's rendering (`GGUF_CHAT_LLAMA_CPP`): the request as llama.cpp v0.5.0's
//! `common_chat_templates_apply` (libllama-common) prepares it, rendered by the library's own
//! engine.
//!
//! What llama.cpp does before it renders, and this module repeats:
//! - the template source: the two patches `common_chat_templates_init` makes (GPT-OSS's check
//!   for channel markers in the content, Mistral's check for empty assistant messages, each
//!   replaced by `{%- if false %}`);
//! - the messages, read as `common_chat_msgs_parse_oaicompat` reads them (a role, content as a
//!   string, null or a list of `text`/`media_marker` parts, tool calls of type `function` with
//!   their arguments kept as a JSON string, `reasoning_content`, `name`, `tool_call_id`; every
//!   other key dropped) and written back as `to_json_oaicompat` writes them (content `""` when
//!   empty, `reasoning_content`/`name`/`tool_call_id` only when not empty);
//! - content parts joined with `\n` when the template reads content only as a string, and a
//!   string wrapped as one text part when it reads content only as parts;
//! - the `developer` role mapped to `system` (except for GPT-OSS templates, which have one);
//! - a first system message merged into the next one (`system + "\n" + next`) when the template
//!   has no system role, or dropped when it is alone;
//! - tool-call arguments parsed back from their JSON string when the template reads them as an
//!   object;
//! - for StepFun's template (the one that says "You have access to the following functions in
//!   JSONSchema format"), contents, reasoning and text parts trimmed of whitespace;
//! - the tools rebuilt as `{"type": "function", "function": {name, description, parameters}}`;
//! - the variables: `bos_token`, `eos_token` (the request's, else empty), `enable_thinking`
//!   (true), `tools` (when there are any), `datetime` (`%b %d %Y`) and `date_string`
//!   (`%d %b %Y`) from the clock (UTC; SOURCE_DATE_EPOCH when set), every other key of the request
//!   as a `chat_template_kwargs` entry (which replaces the defaults), and `add_generation_prompt`
//!   (llama-server's default: true).
//!
//! What the template reads (system role, content as string or parts, tool-call arguments as an
//! object) llama.cpp learns by running the template over probe conversations and watching which
//! values its engine touches; `llama_caps.rs` runs the same probes and watches the output instead
//! (a value the template reads but never writes counts as unread). `continue_final_message`:
//! llama.cpp renders the conversation without the last message, then appends what its handler
//! writes for a continued message: the handler is picked by the template's source as
//! `common_chat_try_specialized_template` picks it (Ministral 3, GPT-OSS, Kimi, DeepSeek V3.2,
//! Gemma 4, Qwen3-Coder, ...: each its own generation prompt and reasoning markers), else its
//! differential analysis finds the reasoning markers (`llama_analysis.rs`) and the generation
//! prompt is what `add_generation_prompt` adds, cut at the start marker. The handlers' own
//! message fixes are repeated too: Ministral 3's reasoning and content as typed parts, GPT-OSS's
//! and LFM2's `thinking`, the older Gemma 4 templates' tool results folded into the model turn
//! (`convert_tool_responses_gemma4`), GPT-OSS's last `<|return|>` written as `<|end|>`.

use minijinja::value::{Value, ValueKind};

use super::error::ChatError;
use super::json;
use super::llama_analysis::Reasoning;
use super::llama_caps::Caps;
use super::objects;
use super::python::{json_dumps, JsonStyle};
use super::template::Compiled;
use super::time;
use crate::error::Error;

/// The source patches `common_chat_templates_init` makes; `None` when none applies.
pub fn patched_source(src: &str) -> Option<String> {
    let mut out = src.to_string();
    if out.contains("<|channel|>") && out.contains("in message.content or") {
        out = out.replace(
            "{%- if \"<|channel|>analysis<|message|>\" in message.content or \"<|channel|>final<|message|>\" in message.content %}",
            "{%- if false %}",
        );
    }
    if out.contains("[TOOL_CALLS]") && out.contains("if (message['content'] is none or") {
        out = out.replace(
            "{%- if (message['content'] is none or message['content'] == '' or message['content']|length == 0) and (message['tool_calls'] is not defined or message['tool_calls'] is none or message['tool_calls']|length == 0) %}",
            "{%- if false %}",
        );
    }
    (out != src).then_some(out)
}

fn refuse(message: impl Into<String>) -> Error {
    ChatError::Request {
        offset: None,
        message: message.into(),
    }
    .into()
}

fn map(pairs: Vec<(&str, Value)>) -> Value {
    Value::from_pairs(pairs.into_iter().map(|(k, v)| (Value::from(k), v)))
}

fn get(v: &Value, key: &str) -> Option<Value> {
    v.get_attr(key).ok().filter(|x| !x.is_undefined())
}

fn string_field(v: &Value, key: &str, what: &str) -> Result<Option<String>, Error> {
    match get(v, key) {
        None => Ok(None),
        Some(x) if x.kind() == ValueKind::String => Ok(Some(x.as_str().unwrap_or("").to_string())),
        Some(x) => Err(refuse(format!(
            "Failed to parse messages: {what} \"{key}\" must be a string, found {}",
            x.kind()
        ))),
    }
}

fn compact(v: &Value) -> Result<String, Error> {
    json_dumps(
        v,
        &JsonStyle {
            ensure_ascii: false,
            indent: None,
            item_sep: ",".into(),
            key_sep: ":".into(),
            sort_keys: false,
        },
    )
    .map_err(|e| refuse(e.to_string()))
}

fn items(v: &Value) -> Result<Vec<Value>, Error> {
    Ok(v.try_iter()
        .map_err(|e| refuse(e.to_string()))?
        .collect::<Vec<_>>())
}

/// One message as `common_chat_msgs_parse_oaicompat` reads it and `to_json_oaicompat` writes
/// it; content parts stay parts.
fn message(m: &Value, trim: bool) -> Result<Value, Error> {
    let fix = |s: String| if trim { c_trim(&s).to_string() } else { s };
    if m.kind() != ValueKind::Map {
        return Err(refuse(format!(
            "Failed to parse messages: Expected 'message' to be an object, found {}",
            m.kind()
        )));
    }
    let role = string_field(m, "role", "a message's")?
        .ok_or_else(|| refuse("Failed to parse messages: Missing 'role' in message"))?;
    let mut out = vec![("role", Value::from(role))];
    let content = get(m, "content");
    let calls = get(m, "tool_calls");
    if content.is_none() && calls.is_none() {
        return Err(refuse(
            "Failed to parse messages: Expected 'content' or 'tool_calls'",
        ));
    }
    let content = match content {
        Some(c) if c.kind() == ValueKind::String => {
            Value::from(fix(c.as_str().unwrap_or("").into()))
        }
        Some(c) if c.kind() == ValueKind::Seq => {
            let mut parts = Vec::new();
            for p in items(&c)? {
                let ty = string_field(&p, "type", "a content part's")?
                    .ok_or_else(|| refuse("Failed to parse messages: Missing content part type"))?;
                if ty != "text" && ty != "media_marker" {
                    return Err(refuse(format!(
                        "Failed to parse messages: Unsupported content part type: \"{ty}\""
                    )));
                }
                let text = string_field(&p, "text", "a content part's")?.ok_or_else(|| {
                    refuse("Failed to parse messages: a content part has no text")
                })?;
                parts.push(map(vec![
                    ("type", Value::from(ty)),
                    ("text", Value::from(text)),
                ]));
            }
            if parts.is_empty() {
                Value::from("")
            } else {
                Value::from(parts)
            }
        }
        Some(c) if objects::is_none(&c) => Value::from(""),
        None => Value::from(""),
        Some(c) => {
            return Err(refuse(format!(
                "Failed to parse messages: Invalid 'content' type: expected string or array, found {}",
                c.kind()
            )));
        }
    };
    out.push(("content", content));
    if let Some(r) = string_field(m, "reasoning_content", "a message's")?.filter(|s| !s.is_empty())
    {
        out.push(("reasoning_content", Value::from(r)));
    }
    if let Some(n) = string_field(m, "name", "a message's")?.filter(|s| !s.is_empty()) {
        out.push(("name", Value::from(n)));
    }
    if let Some(i) = string_field(m, "tool_call_id", "a message's")?.filter(|s| !s.is_empty()) {
        out.push(("tool_call_id", Value::from(i)));
    }
    let mut tool_calls = Vec::new();
    if let Some(calls) = calls.filter(|c| !objects::is_none(c)) {
        for tc in items(&calls)? {
            if string_field(&tc, "type", "a tool call's")?.as_deref() != Some("function") {
                return Err(refuse(
                    "Failed to parse messages: Unsupported or missing tool call type (expected \"function\")",
                ));
            }
            let f = get(&tc, "function")
                .ok_or_else(|| refuse("Failed to parse messages: Missing tool call function"))?;
            let name = string_field(&f, "name", "a tool call's")?
                .ok_or_else(|| refuse("Failed to parse messages: Missing tool call name"))?;
            let args = get(&f, "arguments")
                .ok_or_else(|| refuse("Failed to parse messages: Missing tool call arguments"))?;
            let args = if args.kind() == ValueKind::String {
                args
            } else {
                Value::from(compact(&args)?)
            };
            let mut call = vec![
                ("type", Value::from("function")),
                (
                    "function",
                    map(vec![("name", Value::from(name)), ("arguments", args)]),
                ),
            ];
            if let Some(id) = string_field(&tc, "id", "a tool call's")?.filter(|s| !s.is_empty()) {
                call.push(("id", Value::from(id)));
            }
            tool_calls.push(map(call));
        }
    }
    if !tool_calls.is_empty() {
        out.push(("tool_calls", Value::from(tool_calls)));
    }
    Ok(map(out))
}

/// C's `isspace` trim, as llama.cpp's `trim_whitespace`.
fn c_trim(s: &str) -> &str {
    s.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'))
}

/// Content parts joined as `messages_inp_normalizer::concat_content_parts` joins them.
fn concat_parts(parts: &Value) -> Result<String, Error> {
    let mut text = String::new();
    let mut last_media = false;
    for p in items(parts)? {
        let ty = string_field(&p, "type", "a content part's")?.unwrap_or_default();
        let t = string_field(&p, "text", "a content part's")?.unwrap_or_default();
        let newline = match ty.as_str() {
            "text" => {
                let n = !last_media && !text.is_empty();
                last_media = false;
                n
            }
            "media_marker" => {
                last_media = true;
                false
            }
            _ => continue,
        };
        if newline {
            text.push('\n');
        }
        text.push_str(&t);
    }
    Ok(text)
}

fn with(m: &Value, key: &str, value: Value) -> Result<Value, Error> {
    let mut pairs = Vec::new();
    let mut seen = false;
    for k in items(m)? {
        let name = k.as_str().unwrap_or_default().to_string();
        let v = if name == key {
            seen = true;
            value.clone()
        } else {
            m.get_item(&k).map_err(|e| refuse(e.to_string()))?
        };
        pairs.push((Value::from(name), v));
    }
    if !seen {
        pairs.push((Value::from(key), value));
    }
    Ok(Value::from_pairs(pairs))
}

/// What llama.cpp's rendering of a template needs, made once: the template with llama.cpp's
/// source patches (where one applies), what its probes find, its handler, and (at the first
/// continued message) the reasoning markers of its differential analysis.
pub struct Setup {
    pub patched: Option<Box<Compiled>>,
    pub caps: Caps,
    pub route: Route,
    pub reasoning: std::sync::OnceLock<Reasoning>,
}

/// The message `continue_final_message` continues, rendered after the generation prompt.
pub struct Continued {
    /// The request with `add_generation_prompt` (what it adds is the generation prompt).
    pub with_prompt: Vec<u8>,
    /// The message's content (text parts joined by a blank line, as `render_content` joins them).
    pub content: String,
    /// The message's reasoning.
    pub reasoning: String,
    /// The content is continued (else the reasoning).
    pub content_mode: bool,
    /// The message has nothing (llama.cpp then appends nothing).
    pub empty: bool,
}

/// A request ready for the library's rendering.
pub struct Prepared {
    /// The request (messages fixed, llama.cpp's variables).
    pub request: Vec<u8>,
    /// Whether the request asks for the generation prompt.
    pub add_generation_prompt: bool,
    /// For `continue_final_message`: the continued message.
    pub continued: Option<Continued>,
}

/// The specialized handler `common_chat_try_specialized_template` picks for a template, by the
/// same tests of its source, in the same order; `Auto` for llama.cpp's differential analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Ministral3,
    GptOss,
    MuseGlimmer,
    FunctionaryV32,
    KimiK2,
    KimiK3,
    Ling3,
    Cohere2Moe,
    Lfm2,
    GigaChatV3,
    MiniMaxM3,
    /// DeepSeek V3.2 (`v4` false) or V4.
    DeepSeekV32 {
        v4: bool,
    },
    /// Gemma 4; `old` for the templates before the OpenAI-compatible one.
    Gemma4 {
        old: bool,
    },
    MiniCpm5,
    /// Qwen3-Coder's XML tool calls; `think` where the template writes `<think>`.
    Qwen3Coder {
        think: bool,
    },
    Auto,
}

/// The route llama.cpp takes for a template source.
pub fn route(src: &str) -> Route {
    let has = |s: &str| src.contains(s);
    if has("[SYSTEM_PROMPT]") && has("[TOOL_CALLS]") && has("[ARGS]") && !has("[CALL_ID]") {
        Route::Ministral3
    } else if has("<|channel|>") {
        Route::GptOss
    } else if has("<atem:function_calls>") && has("<|eom|>") {
        Route::MuseGlimmer
    } else if has(">>>all") && has(">>>${recipient}") {
        Route::FunctionaryV32
    } else if has("<|tool_calls_section_begin|>") && has("<|tool_call_begin|>") {
        Route::KimiK2
    } else if has("<|open|>") && has("<|close|>") && has("<|end_of_msg|>") {
        Route::KimiK3
    } else if has("<role>ASSISTANT</role>") && has("<arg_key>") {
        Route::Ling3
    } else if has("<|START_TEXT|>") && has("<|START_ACTION|>") {
        Route::Cohere2Moe
    } else if (has("<|tool_list_start|>") && has("<|tool_list_end|>"))
        || (has("List of tools: [") && !has("<|tool_list_start|>"))
    {
        Route::Lfm2
    } else if has("<|role_sep|>") && has("<|message_sep|>") && !has("<|function_call|>") {
        Route::GigaChatV3
    } else if has("]<]minimax[>[") && has("<tool_call>") && has("<invoke name=") {
        Route::MiniMaxM3
    } else if has("dsml_token") && has("DSML") && (has("function_calls") || has("tool_calls")) {
        Route::DeepSeekV32 {
            v4: !has("function_calls"),
        }
    } else if has("'<|tool_call>call:'") {
        Route::Gemma4 {
            old: !has("{#- OpenAI Chat Completions:"),
        }
    } else if has("Tool usage guidelines:") && has("<function name=\"") && has("<param name=\"") {
        Route::MiniCpm5
    } else if has("<tool_call>")
        && has("<function=")
        && has("<parameter=")
        && !has("'<tool_call><function=' ~ tool_call.name ~ '>'")
    {
        Route::Qwen3Coder {
            think: has("<think>"),
        }
    } else {
        Route::Auto
    }
}

/// What llama.cpp writes after the prompt for a continued message: its handler's generation
/// prompt (for the differential analysis: what `add_generation_prompt` adds, cut at the
/// reasoning start marker), the reasoning between the handler's markers, and the content.
/// `prompt` is the conversation before the message; `added` what the generation prompt adds to
/// it; `markers` the analysis' reasoning markers.
pub fn continuation(
    route: Route,
    prompt: &str,
    c: &Continued,
    added: impl FnOnce() -> Result<String, Error>,
    markers: impl FnOnce() -> Reasoning,
) -> Result<String, Error> {
    let (r, text) = (c.reasoning.as_str(), c.content.as_str());
    let content = c.content_mode;
    // The generation prompt, the reasoning markers and what separates content from reasoning.
    let wrap = |gen: &str, start: &str, end: &str| {
        let mut out = format!("{gen}{start}{r}");
        if content {
            out.push_str(end);
            out.push_str(text);
        }
        out
    };
    Ok(match route {
        Route::Cohere2Moe => wrap(
            "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
            "<|START_THINKING|>",
            "<|END_THINKING|><|START_TEXT|>",
        ),
        Route::DeepSeekV32 { v4 } if v4 && r.is_empty() => {
            let mut out = "<｜Assistant｜></think>".to_string();
            if content {
                out.push_str(text);
            }
            out
        }
        Route::DeepSeekV32 { .. } => wrap("<｜Assistant｜>", "<think>", "</think>"),
        Route::FunctionaryV32 => {
            format!("<|start_header_id|>assistant<|end_header_id|>\n\n>>>all\n{text}")
        }
        Route::Gemma4 { .. } => {
            let turn = if prompt.ends_with("<turn|>\n") {
                "<|turn>model\n"
            } else {
                ""
            };
            wrap(turn, "<|channel>thought\n", "<channel|>")
        }
        Route::GigaChatV3 => format!("assistant<|role_sep|>\n{text}"),
        Route::GptOss => wrap(
            "<|start|>assistant",
            "<|channel|>analysis<|message|>",
            "<|end|><|start|>assistant<|channel|>final<|message|>",
        ),
        Route::KimiK2 => wrap(
            "<|im_assistant|>assistant<|im_middle|>",
            "<think>",
            "</think>",
        ),
        Route::KimiK3 => wrap(
            "<|open|>message role=\"assistant\"<|sep|>",
            "<|open|>think<|sep|>",
            "<|close|>think<|sep|><|open|>response<|sep|>",
        ),
        Route::Lfm2 => wrap("<|im_start|>assistant\n", "<think>", "</think>"),
        Route::Ling3 => wrap("<role>ASSISTANT</role>\n", "<think>", "</think>"),
        Route::MiniCpm5 => wrap("<|im_start|>assistant\n", "<think>\n", "\n</think>\n\n"),
        Route::MiniMaxM3 => wrap(&added()?, "<mm:think>", "</mm:think>"),
        Route::Ministral3 => wrap("", "[THINK]", "[/THINK]"),
        Route::MuseGlimmer => wrap(
            "<|start|>assistant to=self<|message|>",
            "",
            "<|eom|><|start|>assistant to=user<|message|>",
        ),
        Route::Qwen3Coder { think } => {
            let mut out = "<|im_start|>assistant\n".to_string();
            if think {
                out.push_str("<think>\n");
                out.push_str(r);
                if content {
                    out.push_str("\n</think>\n\n");
                }
            }
            if content {
                out.push_str(text);
            }
            out
        }
        Route::Auto => {
            let mut gen = added()?;
            let m = markers();
            if !m.start.is_empty() {
                gen.truncate(gen.find(&m.start).unwrap_or(gen.len()));
                gen.push_str(&m.start);
                gen.push_str(r);
                if content {
                    gen.push_str(&m.end);
                }
            }
            if content {
                gen.push_str(text);
            }
            gen
        }
    })
}

/// The messages as the route's handler adjusts them before it renders.
fn adjust(route: Route, msgs: Vec<Value>) -> Result<Vec<Value>, Error> {
    let mut out = Vec::with_capacity(msgs.len());
    match route {
        Route::Ministral3 => {
            for m in msgs {
                let role = get(&m, "role").and_then(|r| r.as_str().map(str::to_string));
                if !matches!(role.as_deref(), Some("system" | "assistant")) {
                    out.push(m);
                    continue;
                }
                let mut parts = Vec::new();
                if let Some(r) =
                    get(&m, "reasoning_content").filter(|r| r.kind() == ValueKind::String)
                {
                    parts.push(map(vec![
                        ("type", Value::from("thinking")),
                        ("thinking", r),
                    ]));
                }
                match get(&m, "content") {
                    Some(c) if c.kind() == ValueKind::String => {
                        parts.push(map(vec![("type", Value::from("text")), ("text", c)]));
                    }
                    Some(c) if c.kind() == ValueKind::Seq => parts.extend(items(&c)?),
                    _ => {}
                }
                let m = with(&m, "content", Value::from(parts))?;
                out.push(without(&m, "reasoning_content")?);
            }
        }
        Route::GptOss | Route::Lfm2 => {
            for m in msgs {
                match get(&m, "reasoning_content").filter(|r| r.kind() == ValueKind::String) {
                    Some(r) => {
                        let mut m = with(&m, "thinking", r)?;
                        let calls = get(&m, "tool_calls");
                        if route == Route::GptOss
                            && calls
                                .is_some_and(|c| c.kind() == ValueKind::Seq && c.len() != Some(0))
                        {
                            m = without(&m, "content")?;
                        }
                        out.push(m);
                    }
                    None => out.push(m),
                }
            }
        }
        Route::Gemma4 { old: true } => out = gemma4_tool_responses(msgs)?,
        _ => out = msgs,
    }
    Ok(out)
}

fn role_of(m: &Value) -> Option<String> {
    get(m, "role").and_then(|r| r.as_str().map(str::to_string))
}

fn nonempty_seq(v: Option<Value>) -> Option<Value> {
    v.filter(|c| c.kind() == ValueKind::Seq && c.len() != Some(0))
}

/// `convert_tool_responses_gemma4`: an assistant turn with tool calls, the tool results that
/// follow it and the assistant's next answer, folded into one assistant message with
/// `tool_responses` (each result parsed as JSON where it is).
fn gemma4_tool_responses(msgs: Vec<Value>) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        let Some(calls) = nonempty_seq(get(m, "tool_calls"))
            .filter(|_| role_of(m).as_deref() == Some("assistant"))
        else {
            out.push(m.clone());
            i += 1;
            continue;
        };
        let reasoning = get(m, "reasoning_content").filter(|r| r.kind() == ValueKind::String);
        let calls = items(&calls)?;
        i += 1;
        let mut responses = Vec::new();
        while i < msgs.len() && role_of(&msgs[i]).as_deref() == Some("tool") {
            let t = &msgs[i];
            let response = match get(t, "content") {
                Some(c) if c.kind() == ValueKind::String => {
                    json::parse(c.as_str().unwrap_or_default().as_bytes()).unwrap_or(c)
                }
                Some(c) => c,
                None => Value::from(()),
            };
            let mut name = calls
                .get(responses.len())
                .and_then(|tc| get(tc, "function"))
                .and_then(|f| get(&f, "name"))
                .and_then(|n| n.as_str().map(str::to_string))
                .unwrap_or_default();
            if name.is_empty() {
                name = get(t, "tool_call_id")
                    .and_then(|n| n.as_str().map(str::to_string))
                    .unwrap_or_default();
            }
            responses.push(map(vec![
                ("name", Value::from(name)),
                ("response", response),
            ]));
            i += 1;
        }
        let mut content = None;
        if i < msgs.len() && role_of(&msgs[i]).as_deref() == Some("assistant") {
            let next = &msgs[i];
            let has_content = get(next, "content").is_some_and(|c| match c.kind() {
                ValueKind::String => !c.as_str().unwrap_or_default().is_empty(),
                ValueKind::Seq => c.len() != Some(0),
                _ => false,
            });
            if nonempty_seq(get(next, "tool_calls")).is_none() && has_content {
                content = get(next, "content");
                i += 1;
            }
        }
        let mut turn = vec![
            ("role", Value::from("assistant")),
            ("tool_calls", Value::from(calls)),
        ];
        if !responses.is_empty() {
            turn.push(("tool_responses", Value::from(responses)));
        }
        if let Some(c) = content {
            turn.push(("content", c));
        }
        if let Some(r) = reasoning {
            turn.push(("reasoning_content", r));
        }
        out.push(map(turn));
    }
    Ok(out)
}

fn without(m: &Value, key: &str) -> Result<Value, Error> {
    let mut pairs = Vec::new();
    for k in items(m)? {
        if k.as_str() != Some(key) {
            let v = m.get_item(&k).map_err(|e| refuse(e.to_string()))?;
            pairs.push((k, v));
        }
    }
    Ok(Value::from_pairs(pairs))
}

/// The request as llama-server would render it: the fixed messages and llama.cpp's variables,
/// as a request for the library's own rendering.
pub fn prepare_request(
    request: &[u8],
    source: &str,
    caps: &Caps,
    route: Route,
    bos: &str,
    eos: &str,
) -> Result<Prepared, Error> {
    let req = json::parse(request).map_err(|e| ChatError::Request {
        offset: Some(e.offset),
        message: e.message,
    })?;
    if req.kind() != ValueKind::Map {
        return Err(refuse(format!(
            "expected a JSON object, found {}",
            req.kind()
        )));
    }
    let messages =
        get(&req, "messages").ok_or_else(|| refuse("the request has no \"messages\""))?;
    if messages.kind() != ValueKind::Seq {
        return Err(refuse(format!(
            "Failed to parse messages: Expected 'messages' to be an array, found {}",
            messages.kind()
        )));
    }
    // common_chat_continuation_parse: true, "content" or "reasoning_content".
    let continuation = get(&req, "continue_final_message").and_then(|v| match v.kind() {
        ValueKind::Bool if v.is_true() => Some(None),
        ValueKind::String => match v.as_str() {
            Some("content") => Some(Some(true)),
            Some("reasoning_content") => Some(Some(false)),
            _ => None,
        },
        _ => None,
    });
    let mut msgs = Vec::new();
    for m in items(&messages)? {
        msgs.push(message(&m, false)?);
    }
    // StepFun's template: contents trimmed (the continued message keeps its own).
    let trimmed =
        if source.contains("You have access to the following functions in JSONSchema format") {
            let mut t = Vec::new();
            for m in items(&messages)? {
                t.push(message(&m, true)?);
            }
            Some(t)
        } else {
            None
        };
    // The continued message is rendered after the generation prompt: its content (text parts
    // joined by a blank line, as `render_content` joins them) when the content is continued.
    let mut continued = None;
    if let Some(mode) = continuation {
        let (mut content, mut reasoning, mut empty) = (String::new(), String::new(), true);
        let mut no_content = true;
        if let Some(last) = msgs.pop() {
            let c = get(&last, "content").unwrap_or_default();
            content = if c.kind() == ValueKind::Seq {
                let mut texts = Vec::new();
                for p in items(&c)? {
                    if string_field(&p, "type", "a content part's")?.as_deref() == Some("text") {
                        texts.push(
                            string_field(&p, "text", "a content part's")?.unwrap_or_default(),
                        );
                    }
                }
                texts.join("\n\n")
            } else {
                c.as_str().unwrap_or_default().to_string()
            };
            no_content = c.kind() != ValueKind::Seq && content.is_empty();
            reasoning = get(&last, "reasoning_content")
                .and_then(|r| r.as_str().map(str::to_string))
                .unwrap_or_default();
            empty = no_content
                && reasoning.is_empty()
                && ["tool_calls", "name", "tool_call_id"]
                    .iter()
                    .all(|k| get(&last, k).is_none());
        }
        // llama.cpp continues the reasoning when the message has reasoning and no content.
        let content_mode = mode.unwrap_or(reasoning.is_empty() || !no_content);
        continued = Some((content, reasoning, content_mode, empty));
    }
    if let Some(mut t) = trimmed {
        t.truncate(msgs.len());
        msgs = t;
    }
    let only_string = caps.supports_string_content && !caps.supports_typed_content;
    let only_typed = !caps.supports_string_content && caps.supports_typed_content;
    for m in msgs.iter_mut() {
        let c = get(m, "content").unwrap_or_else(|| Value::from(""));
        if only_typed && c.kind() == ValueKind::String {
            let part = map(vec![("type", Value::from("text")), ("text", c)]);
            *m = with(m, "content", Value::from(vec![part]))?;
        } else if only_string && c.kind() == ValueKind::Seq {
            *m = with(m, "content", Value::from(concat_parts(&c)?))?;
        }
    }
    if !source.contains("<|channel|>") {
        for m in msgs.iter_mut() {
            if get(m, "role")
                .and_then(|r| r.as_str().map(str::to_string))
                .as_deref()
                == Some("developer")
            {
                *m = with(m, "role", Value::from("system"))?;
            }
        }
    }
    if !caps.supports_system_role
        && msgs
            .first()
            .and_then(|m| get(m, "role"))
            .is_some_and(|r| r.as_str() == Some("system"))
    {
        if msgs.len() > 1 {
            let first = get(&msgs[0], "content").unwrap_or_default();
            let second = get(&msgs[1], "content").unwrap_or_default();
            let (Some(a), Some(b)) = (first.as_str(), second.as_str()) else {
                return Err(refuse(
                    "the template has no system role and llama.cpp merges the system message into the next one only when both contents are strings",
                ));
            };
            let merged = format!("{a}\n{b}");
            msgs[1] = with(&msgs[1], "content", Value::from(merged))?;
        }
        msgs.remove(0);
    }
    if caps.supports_object_arguments {
        for m in msgs.iter_mut() {
            let Some(calls) = get(m, "tool_calls") else {
                continue;
            };
            let mut fixed = Vec::new();
            for tc in items(&calls)? {
                let f = get(&tc, "function").unwrap_or_default();
                let args = get(&f, "arguments").unwrap_or_default();
                let parsed =
                    json::parse(args.as_str().unwrap_or_default().as_bytes()).map_err(|e| {
                        refuse(format!(
                            "Failed to parse tool call arguments as JSON: {} (byte {})",
                            e.message, e.offset
                        ))
                    })?;
                let f = with(&f, "arguments", parsed)?;
                fixed.push(with(&tc, "function", f)?);
            }
            *m = with(m, "tool_calls", Value::from(fixed))?;
        }
    }
    let msgs = adjust(route, msgs)?;
    let mut out: Vec<(&str, Value)> = vec![("messages", Value::from(msgs))];
    out.push(("bos_token", Value::from(bos)));
    out.push(("eos_token", Value::from(eos)));
    out.push(("enable_thinking", Value::from(true)));
    if let Some(tools) = get(&req, "tools").filter(|t| !objects::is_none(t)) {
        let mut rebuilt = Vec::new();
        for t in items(&tools)? {
            if string_field(&t, "type", "a tool's")?.as_deref() != Some("function") {
                return Err(refuse(
                    "Failed to parse tools: Unsupported or missing tool type (expected \"function\")",
                ));
            }
            let f = get(&t, "function")
                .ok_or_else(|| refuse("Failed to parse tools: Missing tool function"))?;
            let name = string_field(&f, "name", "a tool's")?
                .ok_or_else(|| refuse("Failed to parse tools: a tool function has no name"))?;
            let description = string_field(&f, "description", "a tool's")?.unwrap_or_default();
            let parameters = get(&f, "parameters")
                .filter(|p| !objects::is_none(p))
                .unwrap_or_else(|| map(vec![]));
            rebuilt.push(map(vec![
                ("type", Value::from("function")),
                (
                    "function",
                    map(vec![
                        ("name", Value::from(name)),
                        ("description", Value::from(description)),
                        ("parameters", parameters),
                    ]),
                ),
            ]));
        }
        if !rebuilt.is_empty() {
            out.push(("tools", Value::from(rebuilt)));
        }
    }
    let now = |f: &str| time::strftime_now(f).map_err(|e| refuse(e.to_string()));
    out.push(("datetime", Value::from(now("%b %d %Y")?)));
    out.push(("date_string", Value::from(now("%d %b %Y")?)));
    let mut add_generation_prompt = true;
    let mut kwargs: Vec<(String, Value)> = Vec::new();
    for k in items(&req)? {
        let name = k.as_str().unwrap_or_default().to_string();
        let v = req.get_item(&k).map_err(|e| refuse(e.to_string()))?;
        match name.as_str() {
            "messages" | "tools" | "continue_final_message" => {}
            "add_generation_prompt" => add_generation_prompt = v.is_true() && continued.is_none(),
            _ => kwargs.push((name, v)),
        }
    }
    let mut pairs: Vec<(String, Value)> = Vec::new();
    for (k, v) in out {
        if !kwargs.iter().any(|(n, _)| n == k) {
            pairs.push((k.to_string(), v));
        }
    }
    pairs.extend(kwargs);
    if continued.is_some() {
        add_generation_prompt = false;
    }
    let build = |agp: bool| {
        let mut all = pairs.clone();
        all.push(("add_generation_prompt".to_string(), Value::from(agp)));
        compact(&Value::from_pairs(
            all.into_iter().map(|(k, v)| (Value::from(k), v)),
        ))
        .map(String::into_bytes)
    };
    Ok(Prepared {
        request: build(add_generation_prompt)?,
        add_generation_prompt,
        continued: match continued {
            Some((content, reasoning, content_mode, empty)) => Some(Continued {
                with_prompt: build(true)?,
                content,
                reasoning,
                content_mode,
                empty,
            }),
            None => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::super::ChatTemplate;

    fn render(template: &str, request: &str) -> String {
        ChatTemplate::new(template)
            .unwrap()
            .render_llama_cpp(request.as_bytes(), "<s>", "</s>", false, false)
            .unwrap()
    }

    const PLAIN: &str = "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}\
        {% if add_generation_prompt %}<gen>{% endif %}";

    #[test]
    fn developer_becomes_system_and_the_generation_prompt_is_on_by_default() {
        let r = r#"{"messages": [{"role": "developer", "content": "d"}, {"role": "user", "content": "u"}]}"#;
        assert_eq!(render(PLAIN, r), "[system:d][user:u]<gen>");
        let off =
            r#"{"messages": [{"role": "user", "content": "u"}], "add_generation_prompt": false}"#;
        assert_eq!(render(PLAIN, off), "[user:u]");
    }

    #[test]
    fn system_merges_into_the_next_message_where_the_template_has_no_system_role() {
        let t = "{% for m in messages %}{% if m.role != 'system' %}[{{ m.role }}:{{ m.content }}]\
            {% endif %}{% endfor %}";
        let r = r#"{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}"#;
        assert_eq!(render(t, r), "[user:s\nu]");
        assert_eq!(render(PLAIN, r), "[system:s][user:u]<gen>");
        let t = ChatTemplate::new(t).unwrap();
        assert!(!t.llama_cpp_caps().unwrap().supports_system_role);
    }

    #[test]
    fn arguments_are_parsed_only_for_templates_that_read_them_as_objects() {
        let r = r#"{"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]}], "add_generation_prompt": false}"#;
        let object =
            "{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.name }}\
            {% for k, v in c.function.arguments.items() %}({{ k }}={{ v }}){% endfor %}{% endfor %}\
            {% endfor %}";
        assert_eq!(render(object, r), "f(x=1)");
        let string =
            "{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.name }}\
            {{ c.function.arguments | length }}{% endfor %}{% endfor %}";
        let st = ChatTemplate::new(string).unwrap();
        assert!(!st.llama_cpp_caps().unwrap().supports_object_arguments);
        assert_eq!(render(string, r), "f8");
        // Arguments given as an object reach a string-reading template as compact JSON
        // (`{"x":1,"y":"é"}`: 15 characters).
        let obj = r#"{"messages": [{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1, "y": "é"}}}]}], "add_generation_prompt": false}"#;
        assert_eq!(render(string, obj), "f15");
    }

    #[test]
    fn content_parts_are_joined_for_string_only_templates_and_unknown_keys_dropped() {
        let r = r#"{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "extra": 1}], "add_generation_prompt": false}"#;
        assert_eq!(render(PLAIN, r), "[user:a\nb]");
        let extra = "{% for m in messages %}{{ m.extra is defined }}{% endfor %}";
        assert_eq!(render(extra, r), "False");
    }

    #[test]
    fn continuing_appends_the_last_content_after_the_generation_prompt() {
        let r = r#"{"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "par"}], "continue_final_message": true}"#;
        assert_eq!(render(PLAIN, r), "[user:u]<gen>par");
    }

    #[test]
    fn malformed_messages_are_refused_as_llama_cpp_refuses_them() {
        let t = ChatTemplate::new(PLAIN).unwrap();
        for (r, why) in [
            (
                r#"{"messages": [{"role": "user"}]}"#,
                "Expected 'content' or 'tool_calls'",
            ),
            (r#"{"messages": [{"content": "x"}]}"#, "Missing 'role'"),
            (
                r#"{"messages": [{"role": "user", "content": 5}]}"#,
                "Invalid 'content' type",
            ),
            (
                r#"{"messages": [{"role": "user", "content": [{"type": "image", "text": "x"}]}]}"#,
                "Unsupported content part type",
            ),
        ] {
            let e = t
                .render_llama_cpp(r.as_bytes(), "", "", false, false)
                .unwrap_err();
            assert!(e.to_string().contains(why), "{r}: {e}");
        }
    }

    #[test]
    fn bos_and_eos_are_stripped_where_the_vocabulary_adds_them() {
        let t = ChatTemplate::new("{{ bos_token }}x{{ eos_token }}").unwrap();
        let r = br#"{"messages": [{"role": "user", "content": "u"}]}"#;
        assert_eq!(
            t.render_llama_cpp(r, "<s>", "</s>", true, true).unwrap(),
            "x"
        );
        assert_eq!(
            t.render_llama_cpp(r, "<s>", "</s>", false, false).unwrap(),
            "<s>x</s>"
        );
    }
}
