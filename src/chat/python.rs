//! Template values written as Python writes them: `str()` (what jinja2 prints for `{{ x }}`),
//! `repr()` (inside lists and dicts), floats as `float.__repr__`, and `json.dumps` with the
//! arguments transformers' `tojson` filter passes on.

use super::float::write_float;
use super::map;
use super::objects;
use crate::tokenizer::unicode::flags;
use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind};
use std::fmt::Write as _;

/// How deep `str`, `repr` and `json.dumps` follow nested values (a request is at most
/// [`super::json::MAX_DEPTH`] deep; a template can build deeper ones only by nesting literals).
const MAX_DEPTH: usize = 1000;

fn too_deep() -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("a value nested deeper than {MAX_DEPTH} levels cannot be written"),
    )
}

/// `str(value)`, as jinja2 prints a value.
pub fn write_str(out: &mut String, v: &Value) -> Result<(), Error> {
    match v.kind() {
        ValueKind::Undefined => Ok(()),
        ValueKind::String => {
            out.push_str(v.as_str().unwrap_or_default());
            Ok(())
        }
        _ => write_repr(out, v, 0),
    }
}

/// `str(value)` as a new string.
pub fn to_str(v: &Value) -> Result<String, Error> {
    let mut s = String::new();
    write_str(&mut s, v)?;
    Ok(s)
}

/// `repr(value)`.
pub fn write_repr(out: &mut String, v: &Value, depth: usize) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    match v.kind() {
        ValueKind::Undefined => {}
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if v.is_true() { "True" } else { "False" }),
        ValueKind::Number => write_number(out, v),
        ValueKind::String => write_str_repr(out, v.as_str().unwrap_or_default()),
        ValueKind::Bytes => {
            out.push('b');
            write_str_repr(
                out,
                &String::from_utf8_lossy(v.as_bytes().unwrap_or_default()),
            );
        }
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            for (i, item) in v.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, &item, depth + 1)?;
            }
            out.push(']');
        }
        ValueKind::Map => {
            out.push('{');
            for (i, key) in v.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, &key, depth + 1)?;
                out.push_str(": ");
                write_repr(out, &v.get_item(&key)?, depth + 1)?;
            }
            out.push('}');
        }
        _ if objects::is_none(v) => out.push_str("None"),
        _ => out.push_str(&v.to_string()),
    }
    Ok(())
}

fn write_number(out: &mut String, v: &Value) {
    if v.is_integer() {
        out.push_str(&v.to_string());
    } else if let Ok(f) = f64::try_from(v.clone()) {
        write_float(out, f, "inf", "nan");
    } else {
        out.push_str(&v.to_string());
    }
}

/// Whether Python's `str.isprintable()` holds for the character (repr escapes the others).
fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let f = flags(c as u32);
    !(f.is_control || f.is_separator || f.is_undefined)
}

/// `repr(str)`: single quotes unless the text holds one and no double quote.
pub fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
        }
    }
    out.push(quote);
}

/// The arguments of `json.dumps` that transformers' `tojson` passes on.
pub struct JsonStyle {
    /// `ensure_ascii`: write every character past ASCII as `\uXXXX`.
    pub ensure_ascii: bool,
    /// `indent`: `None`, or the text that one level of nesting adds.
    pub indent: Option<String>,
    /// `separators`: between items, and between a key and its value.
    pub item_sep: String,
    /// The key separator.
    pub key_sep: String,
    /// `sort_keys`.
    pub sort_keys: bool,
}

impl Default for JsonStyle {
    fn default() -> Self {
        JsonStyle {
            ensure_ascii: false,
            indent: None,
            item_sep: ", ".into(),
            key_sep: ": ".into(),
            sort_keys: false,
        }
    }
}

fn not_serializable(v: &Value) -> Error {
    let ty = match v.kind() {
        ValueKind::Undefined => "Undefined".to_string(),
        ValueKind::Bytes => "bytes".to_string(),
        _ => v.kind().to_string(),
    };
    Error::new(
        ErrorKind::InvalidOperation,
        format!("Object of type {ty} is not JSON serializable"),
    )
}

/// `json.dumps(value, ...)`.
pub fn json_dumps(v: &Value, style: &JsonStyle) -> Result<String, Error> {
    let mut out = String::with_capacity(64);
    dump(&mut out, v, style, 0)?;
    Ok(out)
}

fn newline(out: &mut String, style: &JsonStyle, depth: usize) {
    if let Some(indent) = &style.indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    }
}

/// A dict key as json.dumps writes it: strings as they are, numbers, booleans and None as text.
fn json_key(key: &Value) -> Result<String, Error> {
    Ok(match key.kind() {
        ValueKind::String => key.as_str().unwrap_or_default().to_string(),
        ValueKind::Bool => (if key.is_true() { "true" } else { "false" }).to_string(),
        ValueKind::None => "null".to_string(),
        ValueKind::Number => {
            let mut s = String::new();
            if key.is_integer() {
                s.push_str(&key.to_string());
            } else {
                write_float(
                    &mut s,
                    f64::try_from(key.clone()).unwrap_or(f64::NAN),
                    "Infinity",
                    "NaN",
                );
            }
            s
        }
        _ => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "keys must be str, int, float, bool or None, not {}",
                    key.kind()
                ),
            ))
        }
    })
}

fn dump(out: &mut String, v: &Value, style: &JsonStyle, depth: usize) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    match v.kind() {
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if v.is_integer() {
                let _ = write!(out, "{v}");
            } else {
                let f = f64::try_from(v.clone()).unwrap_or(f64::NAN);
                write_float(out, f, "Infinity", "NaN");
            }
        }
        ValueKind::String => json_string(out, v.as_str().unwrap_or_default(), style.ensure_ascii),
        ValueKind::Iterable => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "Object of type generator is not JSON serializable",
            ))
        }
        ValueKind::Seq => {
            // A list of the request or the template is read in place.
            let collected: Vec<Value>;
            let items: &[Value] = match v.downcast_object_ref::<Vec<Value>>() {
                Some(items) => items,
                None => {
                    collected = v.try_iter()?.collect();
                    &collected
                }
            };
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&style.item_sep);
                }
                newline(out, style, depth + 1);
                dump(out, item, style, depth + 1)?;
            }
            newline(out, style, depth);
            out.push(']');
        }
        ValueKind::Map => {
            // A map of the request is read in place.
            let collected: Vec<(Value, Value)>;
            let mut entries: &[(Value, Value)] = match v.downcast_object_ref::<map::Map>() {
                Some(m) => m.entries(),
                _ => {
                    collected = match v.as_object().and_then(|o| o.try_iter_pairs()) {
                        Some(pairs) => pairs.collect(),
                        None => {
                            let mut entries = Vec::new();
                            for key in v.try_iter()? {
                                let value = v.get_item(&key)?;
                                entries.push((key, value));
                            }
                            entries
                        }
                    };
                    &collected
                }
            };
            if entries.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            let sorted: Vec<(Value, Value)>;
            if style.sort_keys {
                let mut s = entries.to_vec();
                sort_keys(&mut s)?;
                sorted = s;
                entries = &sorted;
            }
            out.push('{');
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(&style.item_sep);
                }
                newline(out, style, depth + 1);
                match key.as_str() {
                    Some(k) if key.kind() == ValueKind::String => {
                        json_string(out, k, style.ensure_ascii)
                    }
                    _ => json_string(out, &json_key(key)?, style.ensure_ascii),
                }
                out.push_str(&style.key_sep);
                dump(out, value, style, depth + 1)?;
            }
            newline(out, style, depth);
            out.push('}');
        }
        _ if objects::is_none(v) => out.push_str("null"),
        _ => match objects::as_float(v) {
            Some(f) => write_float(out, f, "Infinity", "NaN"),
            None => return Err(not_serializable(v)),
        },
    }
    Ok(())
}

/// `sorted(d.items())`: keys of one kind (strings by code point, numbers by value); mixed kinds
/// are a TypeError in Python.
fn sort_keys(entries: &mut [(Value, Value)]) -> Result<(), Error> {
    let all_str = entries.iter().all(|(k, _)| k.kind() == ValueKind::String);
    let all_num = entries
        .iter()
        .all(|(k, _)| matches!(k.kind(), ValueKind::Number | ValueKind::Bool));
    if all_str {
        entries.sort_by(|a, b| a.0.as_str().cmp(&b.0.as_str()));
    } else if all_num {
        entries.sort_by(|a, b| {
            let x = f64::try_from(a.0.clone()).unwrap_or(f64::NAN);
            let y = f64::try_from(b.0.clone()).unwrap_or(f64::NAN);
            x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)
        });
    } else {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "'<' not supported between the keys' types (sort_keys needs keys of one kind)",
        ));
    }
    Ok(())
}

/// A JSON string as json.dumps writes it.
pub fn json_string(out: &mut String, s: &str, ensure_ascii: bool) {
    out.reserve(s.len() + 2);
    out.push('"');
    // Runs that need no escape are copied whole.
    let plain = |b: u8| b >= 0x20 && b != b'"' && b != b'\\' && (!ensure_ascii || b < 0x7f);
    let mut rest = s;
    while !rest.is_empty() {
        let run = rest.bytes().position(|b| !plain(b)).unwrap_or(rest.len());
        out.push_str(&rest[..run]);
        rest = &rest[run..];
        let Some(c) = rest.chars().next() else {
            break;
        };
        rest = &rest[c.len_utf8()..];
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if ensure_ascii && (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_chooses_quotes_and_escapes_as_python() {
        let mut s = String::new();
        write_str_repr(&mut s, "it's");
        assert_eq!(s, "\"it's\"");
        s.clear();
        write_str_repr(&mut s, "a'b\"\n\u{0}\u{e9}\u{200b}");
        assert_eq!(s, "'a\\'b\"\\n\\x00\u{e9}\\u200b'");
    }

    #[test]
    fn json_dumps_separators_and_indent() {
        let v = Value::from_pairs([
            ("b", Value::from(vec![Value::from(1), Value::from(2.5)])),
            ("a", Value::from("\u{e9}\"\u{1}")),
        ]);
        assert_eq!(
            json_dumps(&v, &JsonStyle::default()).unwrap(),
            "{\"b\": [1, 2.5], \"a\": \"\u{e9}\\\"\\u0001\"}"
        );
        let style = JsonStyle {
            indent: Some("  ".into()),
            item_sep: ",".into(),
            sort_keys: true,
            ensure_ascii: true,
            ..JsonStyle::default()
        };
        assert_eq!(
            json_dumps(&v, &style).unwrap(),
            "{\n  \"a\": \"\\u00e9\\\"\\u0001\",\n  \"b\": [\n    1,\n    2.5\n  ]\n}"
        );
    }
}
