//! What a template reads, as llama.cpp's `jinja::caps` (`caps_get`) names it: the system role,
//! content as a string or as typed parts, tool calls, tool-call arguments as an object. llama.cpp
//! learns it by running the template over probe conversations and watching which values its
//! engine touches; these are the same probes, rendered by the library's engine, with the output
//! watched instead.

use super::python;
use super::template::Compiled;

/// What the template reads, as llama.cpp's `jinja::caps` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// A system message's content reaches the output.
    pub supports_system_role: bool,
    /// Content given as a string reaches the output.
    pub supports_string_content: bool,
    /// Content given as a list of text parts reaches the output as text.
    pub supports_typed_content: bool,
    /// An assistant message's tool calls reach the output.
    pub supports_tool_calls: bool,
    /// A tool call's arguments are read as an object (a value inside them reaches the output
    /// other than as part of the whole object's JSON).
    pub supports_object_arguments: bool,
}

const MARKER: &str = "STRING_MARKER";
const SYSTEM_MARKER: &str = "SYSTEM_MARKER_8d1f";
const ARG_MARKER: &str = "ARG_MARKER_5c2e";

fn probe(t: &Compiled, request: &str) -> Option<String> {
    t.render(request.as_bytes(), &[], true).ok()
}

/// Probes the template as llama.cpp's `caps_get` does.
pub fn caps(t: &Compiled) -> Caps {
    let tools = r#"[{"type": "function", "function": {"name": "tool1", "description": "Tool description", "parameters": {"type": "object", "properties": {"arg": {"type": "string", "description": "Arg description"}}, "required": ["arg"]}}}]"#;
    let string_content = probe(
        t,
        &format!(
            r#"{{"messages": [{{"role": "user", "content": "{MARKER}"}}], "tools": [], "add_generation_prompt": true, "bos_token": "", "eos_token": ""}}"#
        ),
    );
    let typed_content = probe(
        t,
        &format!(
            r#"{{"messages": [{{"role": "user", "content": [{{"type": "text", "text": "{MARKER}"}}]}}], "tools": [], "add_generation_prompt": true, "bos_token": "", "eos_token": ""}}"#
        ),
    );
    let supports_string_content = string_content.is_some_and(|o| o.contains(MARKER));
    let supports_typed_content = typed_content
        .is_some_and(|o| o.contains(MARKER) && !o.contains("'type'") && !o.contains("\"type\""));
    let system = probe(
        t,
        &format!(
            r#"{{"messages": [{{"role": "system", "content": "{SYSTEM_MARKER}"}}, {{"role": "user", "content": "User message"}}], "tools": [], "add_generation_prompt": true, "bos_token": "", "eos_token": ""}}"#
        ),
    );
    let supports_system_role = system.is_some_and(|o| o.contains(SYSTEM_MARKER));
    let calls = |args: Option<&str>| {
        let tool_calls = match args {
            Some(args) => format!(
                r#", "tool_calls": [{{"id": "call00001", "type": "function", "function": {{"name": "tool1", "arguments": {args}}}}}]"#
            ),
            None => String::new(),
        };
        format!(
            r#"{{"messages": [{{"role": "user", "content": "User message"}}, {{"role": "assistant", "content": ""{tool_calls}}}, {{"role": "tool", "content": "Tool response", "tool_call_id": "call00001"}}, {{"role": "assistant", "content": "The tool response was 'tool response'"}}, {{"role": "user", "content": "User message"}}], "tools": {tools}, "add_generation_prompt": true, "bos_token": "", "eos_token": ""}}"#
        )
    };
    let without = probe(t, &calls(None));
    let object_args = format!(r#"{{"arg": "{ARG_MARKER}"}}"#);
    let object = probe(t, &calls(Some(&object_args)));
    let mut supports_tool_calls = true;
    let mut supports_object_arguments = false;
    if let Some(o) = &object {
        if without.as_ref() == Some(o) {
            supports_tool_calls = false;
        } else {
            supports_object_arguments = o.contains(ARG_MARKER);
        }
    }
    if !supports_object_arguments {
        let string_args = json_string(&object_args);
        match probe(t, &calls(Some(&string_args))) {
            Some(o) => supports_tool_calls = without.as_ref() != Some(&o),
            None => supports_tool_calls = false,
        }
    }
    Caps {
        supports_system_role,
        supports_string_content,
        supports_typed_content,
        supports_tool_calls,
        supports_object_arguments,
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::new();
    python::json_string(&mut out, s, false);
    out
}
