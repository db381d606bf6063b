//! The request's JSON, read into template values as Python's `json.loads` reads it: objects keep
//! their key order (a repeated key keeps its first place and its last value), integers stay
//! integers, floats are the nearest double (correctly rounded), and every refusal names the byte
//! offset.
//!
//! A reader of its own rather than serde_json: serde_json reads integers beyond 64 bits as
//! floats (Python keeps them exact, and prints them differently), its exact float reading and
//! ordered objects are crate-wide features that would change every other user's numbers and
//! maps in the build, and it gives line and column where the library's errors give offsets.

use super::map::{self, SCANNED_KEYS};
use minijinja::value::Value;
use std::collections::HashMap;

/// How deep arrays and objects may nest (Python's own limit is its recursion limit, about 1000).
pub const MAX_DEPTH: usize = 512;

/// A refusal: what was expected, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// The byte offset in the request.
    pub offset: u64,
    /// What was expected and what was found.
    pub message: String,
}

/// Reads one JSON value that fills `text` (whitespace around it allowed).
pub fn parse(text: &[u8]) -> Result<Value, JsonError> {
    // Where the whole request is UTF-8 (the rule), its strings need no check of their own.
    let mut p = Parser {
        text,
        utf8: std::str::from_utf8(text).ok(),
        pos: 0,
    };
    p.skip_ws();
    let v = p.value(0)?;
    p.skip_ws();
    if p.pos != text.len() {
        return Err(p.error("expected the end of the request after the JSON value"));
    }
    Ok(v)
}

/// The length of the run of `text` that a string copies as it is (up to a quote, a backslash
/// or a control byte), eight bytes at a time.
fn plain_run(text: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Flags (high bits) every byte below `n`, and maybe bytes after one: the bytewise scan below
    // finishes from the word, so a flag is only a reason to look closer.
    fn below(w: u64, n: u8) -> u64 {
        w.wrapping_sub(ONES * u64::from(n)) & !w & HIGH
    }
    let mut i = 0;
    while let Some(chunk) = text.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let special = below(w, 0x20)
            | below(w ^ (ONES * u64::from(b'"')), 1)
            | below(w ^ (ONES * u64::from(b'\\')), 1);
        if special != 0 {
            break;
        }
        i += 8;
    }
    while let Some(&b) = text.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            break;
        }
        i += 1;
    }
    i
}

struct Parser<'a> {
    text: &'a [u8],
    /// The request as text, where it is UTF-8.
    utf8: Option<&'a str>,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> JsonError {
        let found = match self.text.get(self.pos) {
            None => "the end of the request".to_string(),
            Some(&b) if b.is_ascii_graphic() => format!("'{}'", b as char),
            Some(&b) => format!("byte 0x{b:02x}"),
        };
        JsonError {
            offset: self.pos as u64,
            message: format!("{what}, found {found}"),
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, word: &[u8]) -> bool {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        match self.text.get(self.pos) {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string_value(),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') if self.eat(b"true") => Ok(Value::from(true)),
            Some(b'f') if self.eat(b"false") => Ok(Value::from(false)),
            Some(b'n') if self.eat(b"null") => Ok(Value::from(())),
            _ => Err(self.error("expected a JSON value")),
        }
    }

    fn enter(&self, depth: usize) -> Result<(), JsonError> {
        if depth > MAX_DEPTH {
            return Err(JsonError {
                offset: self.pos as u64,
                message: format!("arrays and objects nested deeper than {MAX_DEPTH} levels"),
            });
        }
        Ok(())
    }

    fn array(&mut self, depth: usize) -> Result<Value, JsonError> {
        self.enter(depth)?;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.eat(b"]") {
            return Ok(Value::from(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            if self.eat(b",") {
                continue;
            }
            if self.eat(b"]") {
                return Ok(Value::from(items));
            }
            return Err(self.error("expected ',' or ']' in an array"));
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, JsonError> {
        self.enter(depth)?;
        self.pos += 1;
        let mut entries: Vec<(Value, Value)> = Vec::with_capacity(4);
        // Past a few keys, an index finds repeated ones (a scan would be quadratic); the map
        // keeps it for its lookups.
        let mut index: Option<HashMap<Value, usize>> = None;
        self.skip_ws();
        if !self.eat(b"}") {
            loop {
                self.skip_ws();
                if self.text.get(self.pos) != Some(&b'"') {
                    return Err(self.error("expected a string key in an object"));
                }
                let key = self.string_value()?;
                self.skip_ws();
                if !self.eat(b":") {
                    return Err(self.error("expected ':' after an object key"));
                }
                self.skip_ws();
                let value = self.value(depth)?;
                // As a Python dict: a repeated key keeps its first place and takes the last value.
                let seen = match &index {
                    Some(index) => index.get(&key).copied(),
                    None => entries.iter().position(|(k, _)| *k == key),
                };
                match seen {
                    Some(i) => entries[i].1 = value,
                    None => {
                        if let Some(index) = &mut index {
                            index.insert(key.clone(), entries.len());
                        } else if entries.len() == SCANNED_KEYS {
                            let mut map: HashMap<Value, usize> =
                                entries.iter().map(|(k, _)| k.clone()).zip(0..).collect();
                            map.insert(key.clone(), entries.len());
                            index = Some(map);
                        }
                        entries.push((key, value));
                    }
                }
                self.skip_ws();
                if self.eat(b",") {
                    continue;
                }
                if self.eat(b"}") {
                    break;
                }
                return Err(self.error("expected ',' or '}' in an object"));
            }
        }
        Ok(map::value(entries, index))
    }

    /// A string as a value: one without escapes straight from the request's bytes.
    fn string_value(&mut self) -> Result<Value, JsonError> {
        let start = self.pos + 1;
        let rest = &self.text[start..];
        let run = plain_run(rest);
        if rest.get(run) == Some(&b'"') {
            // The run ends before an ASCII quote and starts after one: on character boundaries.
            let s = match self.utf8 {
                Some(all) => all.get(start..start + run),
                None => std::str::from_utf8(&rest[..run]).ok(),
            };
            if let Some(s) = s {
                self.pos = start + run + 1;
                return Ok(Value::from(s));
            }
        }
        Ok(Value::from(self.string()?))
    }

    fn string(&mut self) -> Result<String, JsonError> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run = self.pos;
            while let Some(&b) = self.text.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            match std::str::from_utf8(&self.text[run..self.pos]) {
                Ok(s) => out.push_str(s),
                Err(e) => {
                    self.pos = run + e.valid_up_to();
                    return Err(self.error("expected UTF-8 text in a string"));
                }
            }
            match self.text.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => {
                    return Err(self.error("expected a control character to be escaped in a string"))
                }
                None => {
                    return Err(JsonError {
                        offset: start as u64,
                        message: "the string that starts here has no closing '\"'".to_string(),
                    })
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), JsonError> {
        let c = match self.text.get(self.pos) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.pos += 1;
                let first = self.hex4()?;
                // A high surrogate followed by a low one is one code point; a lone surrogate is
                // refused (Python keeps it, but it has no UTF-8 form the output could hold).
                let code = if (0xD800..0xDC00).contains(&first) && self.eat(b"\\u") {
                    let second = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&second) {
                        self.pos -= 6;
                        return Err(self.error("expected a low surrogate after a high one"));
                    }
                    0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                } else {
                    first
                };
                return match char::from_u32(code) {
                    Some(c) => {
                        out.push(c);
                        Ok(())
                    }
                    None => {
                        self.pos -= 6;
                        Err(self
                            .error("expected a \\u escape of a character, not a lone surrogate"))
                    }
                };
            }
            _ => {
                return Err(self.error("expected an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)"))
            }
        };
        self.pos += 1;
        out.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self.text.get(self.pos..self.pos + 4);
        let value = digits
            .and_then(|d| std::str::from_utf8(d).ok())
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|d| u32::from_str_radix(d, 16).ok());
        match value {
            Some(v) => {
                self.pos += 4;
                Ok(v)
            }
            None => Err(self.error("expected four hexadecimal digits after \\u")),
        }
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.pos;
        self.eat(b"-");
        match self.text.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("expected a digit")),
        }
        let mut float = false;
        if self.eat(b".") {
            float = true;
            if !self.text.get(self.pos).is_some_and(u8::is_ascii_digit) {
                return Err(self.error("expected a digit after the decimal point"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.text.get(self.pos) {
            float = true;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.text.get(self.pos) {
                self.pos += 1;
            }
            if !self.text.get(self.pos).is_some_and(u8::is_ascii_digit) {
                return Err(self.error("expected a digit in the exponent"));
            }
            self.digits();
        }
        // ASCII by construction.
        let text = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or_default();
        if float {
            // Rust's parse is correctly rounded, as Python's float() is; out of range is an
            // infinity there as here.
            return Ok(super::objects::float(
                text.parse::<f64>().unwrap_or(f64::NAN),
            ));
        }
        match text.parse::<i128>() {
            Ok(i) => Ok(match i64::try_from(i) {
                Ok(small) => Value::from(small),
                Err(_) => Value::from(i),
            }),
            Err(_) => Err(JsonError {
                offset: start as u64,
                message: format!(
                    "the integer {} has more digits than the 128 bits a template value holds",
                    crate::text::escape(&text.as_bytes()[..text.len().min(60)])
                ),
            }),
        }
    }

    fn digits(&mut self) {
        while self.text.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_their_order_and_the_last_value_of_a_repeated_key() {
        let v = parse(br#"{"b": 1, "a": [true, null, "x"], "b": 2}"#).unwrap();
        let keys: Vec<String> = v.try_iter().unwrap().map(|k| k.to_string()).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(v.get_attr("b").unwrap(), Value::from(2));
    }

    #[test]
    fn repeated_keys_of_a_large_object_are_found_too() {
        let mut text = String::from("{");
        for i in 0..40 {
            text.push_str(&format!("\"k{}\": {i}, ", i % 25));
        }
        text.push_str("\"k3\": \"last\"}");
        let v = parse(text.as_bytes()).unwrap();
        let keys: Vec<String> = v.try_iter().unwrap().map(|k| k.to_string()).collect();
        let want: Vec<String> = (0..25).map(|i| format!("k{i}")).collect();
        assert_eq!(keys, want);
        assert_eq!(v.get_attr("k3").unwrap(), Value::from("last"));
        assert_eq!(v.get_attr("k20").unwrap(), Value::from(20));
        assert_eq!(v.get_attr("k2").unwrap(), Value::from(27));
    }

    #[test]
    fn numbers_are_read_as_python_reads_them() {
        assert!(parse(b"12").unwrap().is_integer());
        assert!(!parse(b"12.0").unwrap().is_integer());
        assert_eq!(
            f64::try_from(parse(b"0.1").unwrap()).unwrap(),
            0.1,
            "correctly rounded"
        );
        assert_eq!(parse(b"1e-7").unwrap().to_string(), "1e-07");
        let big = parse(b"-170141183460469231731687303715884105728").unwrap();
        assert_eq!(big.to_string(), "-170141183460469231731687303715884105728");
        let e = parse(b"[1, 1701411834604692317316873037158841057280]").unwrap_err();
        assert_eq!(e.offset, 4);
    }

    #[test]
    fn plain_runs_stop_at_the_first_quote_backslash_or_control_byte() {
        let text = "abcdefgh\u{e9}\u{1F600}ijklmnopqrstuvwxyz0123456789".as_bytes();
        for at in 0..text.len() {
            for stop in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                let mut t = text.to_vec();
                t[at] = stop;
                assert_eq!(plain_run(&t), at, "{stop:#x} at {at}");
            }
        }
        assert_eq!(plain_run(text), text.len());
        assert_eq!(plain_run(b" !#[]~\x7f\xff"), 8);
    }

    #[test]
    fn escapes_and_surrogate_pairs() {
        let v = parse(br#""a\n\u00e9\ud83d\ude00\/""#).unwrap();
        assert_eq!(v.as_str().unwrap(), "a\n\u{e9}\u{1F600}/");
        assert_eq!(parse(br#""\ud83d""#).unwrap_err().offset, 1);
    }

    #[test]
    fn refusals_name_the_offset() {
        assert_eq!(parse(b"{\"a\": }").unwrap_err().offset, 6);
        assert_eq!(parse(b"[1, 2").unwrap_err().offset, 5);
        assert_eq!(parse(b"\"abc").unwrap_err().offset, 0);
        assert_eq!(parse(b"\"a\xff\"").unwrap_err().offset, 2);
        assert_eq!(parse(b"[1] x").unwrap_err().offset, 4);
        let deep = "[".repeat(10_000);
        let e = parse(deep.as_bytes()).unwrap_err();
        assert_eq!(e.offset, MAX_DEPTH as u64);
        assert!(e.message.contains("nested deeper"), "{}", e.message);
    }
}
