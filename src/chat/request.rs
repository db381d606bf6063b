//! A request made into what the template sees, as transformers' `apply_chat_template` and
//! `render_jinja_template` make it: messages without their `None` keys, reasoning copied under
//! the names templates read, the final message tagged for `continue_final_message`, `tools` and
//! `documents` passed as given (or `None`), the file's special tokens under the request's own
//! variables; and the rendered text cut after the continued message.

use super::error::ChatError;
use super::map;
use super::objects;
use super::python;
use minijinja::value::{Value, ValueKind};

/// The names a message's reasoning is passed under; the first is the one templates read.
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "thinking", "reasoning"];

/// What transformers appends to the continued message to find it in the output.
const CONTINUE_TAG: &str = "CONTINUE_FINAL_MESSAGE_TAG ";

/// A message: its keys in order.
type Message = Vec<(Value, Value)>;

/// A request made ready to render.
pub struct Prepared {
    /// The template's variables.
    pub context: Value,
    /// With `continue_final_message`: the text of the continued message, to cut after.
    continued: Option<String>,
}

fn refuse(message: impl Into<String>) -> ChatError {
    ChatError::Request {
        offset: None,
        message: message.into(),
    }
}

fn repr(v: &Value) -> String {
    let mut s = String::new();
    let _ = python::write_repr(&mut s, v, 0);
    s
}

/// A message's keys are distinct ([`set`] keeps them so).
fn message_value(m: &Message) -> Value {
    map::value(m.clone(), None)
}

fn get<'a>(m: &'a Message, key: &str) -> Option<&'a Value> {
    m.iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

fn set(m: &mut Message, key: &str, value: Value) {
    match m.iter_mut().find(|(k, _)| k.as_str() == Some(key)) {
        Some(slot) => slot.1 = value,
        None => m.push((Value::from(key), value)),
    }
}

/// `{"thinking": r, **message, "reasoning_content": r}` for a message with reasoning.
fn alias_reasoning(m: Message) -> Message {
    let Some(reasoning) = REASONING_FIELDS
        .iter()
        .find_map(|f| get(&m, f).filter(|v| !v.is_none()).cloned())
    else {
        return m;
    };
    let mut out: Message = vec![(Value::from("thinking"), reasoning.clone())];
    for (k, v) in m {
        match k.as_str() {
            Some(name) => set(&mut out, name, v),
            None => out.push((k, v)),
        }
    }
    set(&mut out, "reasoning_content", reasoning);
    out
}

/// Python's `a + b` for the continued field: strings only.
fn append_tag(v: &Value) -> Result<Value, ChatError> {
    match v.as_str() {
        Some(s) => Ok(Value::from(format!("{s}{CONTINUE_TAG}"))),
        None => Err(refuse(format!(
            "can only concatenate str (not \"{}\") to the continued message's {}",
            v.kind(),
            repr(v)
        ))),
    }
}

/// The request as the template sees it.
///
/// `template` is the template's source (transformers checks that it names the continued field);
/// `special` the file's special tokens (`bos_token`, ...), which the request's own keys replace.
pub fn prepare(
    request: &Value,
    template: &str,
    special: &[(String, String)],
) -> Result<Prepared, ChatError> {
    if request.kind() != ValueKind::Map {
        return Err(ChatError::Request {
            offset: Some(0),
            message: format!("expected a JSON object, found {}", request.kind()),
        });
    }
    let mut messages = None;
    let mut tools = objects::none();
    let mut documents = objects::none();
    let mut add_generation_prompt = Value::from(false);
    let mut continue_final = Value::from(false);
    let mut kwargs: Vec<(Value, Value)> = special
        .iter()
        .map(|(k, v)| (Value::from(k.as_str()), Value::from(v.as_str())))
        .collect();
    for key in request.try_iter().map_err(|e| refuse(e.to_string()))? {
        let value = request.get_item(&key).map_err(|e| refuse(e.to_string()))?;
        match key.as_str().unwrap_or_default() {
            "messages" => messages = Some(value),
            "tools" if !value.is_none() => tools = value,
            "documents" if !value.is_none() => documents = value,
            "tools" | "documents" => {}
            "add_generation_prompt" => add_generation_prompt = value,
            "continue_final_message" => continue_final = value,
            name => {
                kwargs.retain(|(k, _)| k.as_str() != Some(name));
                kwargs.push((key.clone(), value));
            }
        }
    }
    let messages = messages.ok_or_else(|| refuse("the request has no \"messages\""))?;
    if messages.kind() != ValueKind::Seq {
        return Err(refuse(format!(
            "\"messages\" must be a list of messages, found {}",
            messages.kind()
        )));
    }
    let list: Vec<Value> = messages
        .try_iter()
        .map_err(|e| refuse(e.to_string()))?
        .collect();
    if list.is_empty() {
        return Err(refuse(
            "Cannot apply chat template to an empty conversation. Provide at least one message.",
        ));
    }
    if list.first().is_some_and(|m| m.kind() == ValueKind::Seq) {
        return Err(refuse(
            "\"messages\" holds a list of conversations: render one conversation at a time",
        ));
    }
    // _normalize_chat_messages: every message a dict, without the keys whose value is None.
    // A message that needs no change (no None, no reasoning to alias) is passed as it is.
    let continuing = continue_final.is_true();
    let mut chat: Vec<Message> = Vec::with_capacity(list.len());
    let mut unchanged: Vec<Option<Value>> = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        if m.kind() != ValueKind::Map {
            return Err(refuse(format!(
                "Chat messages should be dicts, dataclasses or pydantic models, but got {}.",
                repr(m)
            )));
        }
        // The continued message is changed; a message of the request without a None or a
        // reasoning key is not (and needs no copy of its keys).
        let continued = continuing && i + 1 == list.len();
        let same = !continued
            && m.downcast_object_ref::<map::Map>().is_some_and(|map| {
                !map.entries().iter().any(|(k, v)| {
                    v.is_none() || k.as_str().is_some_and(|k| REASONING_FIELDS.contains(&k))
                })
            });
        if same {
            unchanged.push(Some(m.clone()));
            chat.push(Message::new());
            continue;
        }
        let mut out = Message::new();
        match m.as_object().and_then(|o| o.try_iter_pairs()) {
            Some(pairs) => out.extend(pairs.filter(|(_, v)| !v.is_none())),
            None => {
                for key in m.try_iter().map_err(|e| refuse(e.to_string()))? {
                    let v = m.get_item(&key).map_err(|e| refuse(e.to_string()))?;
                    if !v.is_none() {
                        out.push((key, v));
                    }
                }
            }
        }
        unchanged.push(None);
        chat.push(out);
    }
    if continuing && add_generation_prompt.is_true() {
        return Err(refuse(
            "continue_final_message and add_generation_prompt are not compatible. Use \
             continue_final_message when you want the model to continue the final message, and \
             add_generation_prompt when you want to add a header that will prompt it to start a \
             new assistant message instead.",
        ));
    }
    if !objects::is_none(&tools) {
        if tools.kind() != ValueKind::Seq {
            return Err(refuse(format!(
                "\"tools\" must be a list of JSON schemas, found {}",
                tools.kind()
            )));
        }
        for t in tools.try_iter().map_err(|e| refuse(e.to_string()))? {
            if t.kind() != ValueKind::Map {
                return Err(refuse(
                    "Tools should either be a JSON schema, or a callable function with type \
                     hints and a docstring suitable for auto-conversion to a schema.",
                ));
            }
        }
    }
    if !objects::is_none(&documents) {
        // Python iterates them: a dict gives its keys and a string its characters, neither a
        // dict.
        let ok = match documents.kind() {
            ValueKind::Seq => documents
                .try_iter()
                .map_err(|e| refuse(e.to_string()))?
                .all(|d| d.kind() == ValueKind::Map),
            ValueKind::Map | ValueKind::String => documents.len() == Some(0),
            _ => false,
        };
        if !ok {
            return Err(refuse(
                "Documents should be a list of dicts with 'title' and 'text' keys!",
            ));
        }
    }
    let mut chat: Vec<Message> = chat.into_iter().map(alias_reasoning).collect();

    let mut continued = None;
    if continuing {
        let field = match continue_final.as_str() {
            Some(f) => f.to_string(),
            None => "content".to_string(),
        };
        let last = chat.last_mut().expect("the conversation is not empty");
        let Some(final_message) = get(last, &field).cloned() else {
            return Err(refuse(format!(
                "continue_final_message is set but the final message has no \"{field}\" to continue!"
            )));
        };
        let mut fields = vec![field.clone()];
        if REASONING_FIELDS.contains(&field.as_str()) {
            fields = REASONING_FIELDS
                .iter()
                .filter(|f| get(last, f) == Some(&final_message))
                .map(|f| f.to_string())
                .collect();
        }
        if !fields.iter().any(|f| template.contains(f.as_str())) {
            return Err(refuse(format!(
                "continue_final_message is set to \"{field}\" but this is not an accepted field in the chat_template"
            )));
        }
        if final_message.kind() == ValueKind::Seq {
            let mut blocks: Vec<Value> = final_message
                .try_iter()
                .map_err(|e| refuse(e.to_string()))?
                .collect();
            let mut text = None;
            for block in blocks.iter_mut().rev() {
                if block.kind() != ValueKind::Map {
                    continue;
                }
                let mut b: Message = Vec::new();
                for key in block.try_iter().map_err(|e| refuse(e.to_string()))? {
                    let v = block.get_item(&key).map_err(|e| refuse(e.to_string()))?;
                    b.push((key, v));
                }
                if let Some(t) = get(&b, "text").cloned() {
                    text = Some(t.clone());
                    set(&mut b, "text", append_tag(&t)?);
                    *block = message_value(&b);
                    break;
                }
            }
            let Some(text) = text else {
                return Err(refuse(
                    "continue_final_message is set but we could not find any text to continue in the final message!",
                ));
            };
            set(last, &field, Value::from(blocks));
            continued = Some(python::to_str(&text).map_err(|e| refuse(e.to_string()))?);
        } else {
            for f in &fields {
                let v = get(last, f).cloned().unwrap_or_default();
                set(last, f, append_tag(&v)?);
            }
            continued = Some(python::to_str(&final_message).map_err(|e| refuse(e.to_string()))?);
        }
    }

    let mut vars: Vec<(Value, Value)> = vec![
        (
            Value::from("messages"),
            Value::from(
                chat.iter()
                    .zip(unchanged)
                    .map(|(m, same)| same.unwrap_or_else(|| message_value(m)))
                    .collect::<Vec<_>>(),
            ),
        ),
        (Value::from("tools"), tools),
        (Value::from("documents"), documents),
        (Value::from("add_generation_prompt"), add_generation_prompt),
    ];
    for (k, v) in kwargs {
        let name = k.as_str().unwrap_or_default().to_string();
        match vars
            .iter_mut()
            .find(|(vk, _)| vk.as_str() == Some(name.as_str()))
        {
            Some(slot) => slot.1 = v,
            None => vars.push((k, v)),
        }
    }
    Ok(Prepared {
        context: map::value(vars, None),
        continued,
    })
}

/// Python's `str.strip()`.
fn py_strip(s: &str) -> &str {
    s.trim_matches(super::methods::is_py_space)
}

impl Prepared {
    /// The rendered text as transformers returns it: with `continue_final_message`, cut where
    /// the continued message's tag begins.
    pub fn finish(&self, rendered: String) -> Result<String, ChatError> {
        let Some(final_message) = &self.continued else {
            return Ok(rendered);
        };
        let tag = CONTINUE_TAG.trim_end();
        if !rendered.contains(py_strip(final_message)) || !rendered.contains(tag) {
            return Err(ChatError::Render {
                message: format!(
                    "continue_final_message is set but the final message does not appear in the \
                     chat after applying the chat template! This can happen if the chat template \
                     deletes portions of the final message. Please verify the chat template and \
                     final message in your chat to ensure they are compatible.Final message to \
                     continue: {}\nRendered chat:\n{rendered}",
                    py_strip(final_message)
                ),
                line: None,
                column: None,
            });
        }
        let at = rendered.rfind(tag).expect("the tag is in the text");
        if rendered[at..].starts_with(CONTINUE_TAG) {
            Ok(rendered[..at].to_string())
        } else {
            Ok(rendered[..at]
                .trim_end_matches(super::methods::is_py_space)
                .to_string())
        }
    }
}
