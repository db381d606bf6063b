//! Python's methods on strings, dicts and lists, as templates call them (`content.strip()`,
//! `message.get('role')`, `text.split('</think>')`), with Python's semantics: code-point
//! indices, Python's whitespace, `split()` without a separator. The sandbox's refusals stay
//! refusals: no method that changes a value exists here (`list.append` is unknown, as the
//! immutable sandbox makes it an error).

use super::python;
use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Error, ErrorKind, State};

/// Python's `str.isspace()` for one character: Rust's whitespace and the four separators
/// U+001C to U+001F.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// A count or index from a template as a `usize`: negative ones are 0, and ones past the
/// platform's range are its largest.
fn count(n: i64) -> usize {
    usize::try_from(n.max(0)).unwrap_or(usize::MAX)
}

fn unknown(value: &Value, name: &str) -> Error {
    Error::new(
        ErrorKind::UnknownMethod,
        format!("{} has no method named {name}", value.kind()),
    )
}

fn bad_args(name: &str, what: &str) -> Error {
    Error::new(ErrorKind::InvalidOperation, format!("{name}(): {what}"))
}

/// Splits positional arguments from keyword ones.
fn split_args(args: &[Value]) -> Result<(Vec<Value>, Option<Kwargs>), Error> {
    let mut positional = Vec::new();
    let mut kwargs = None;
    for a in args {
        if a.is_kwargs() {
            kwargs = Some(Kwargs::try_from(a.clone())?);
        } else {
            positional.push(a.clone());
        }
    }
    Ok((positional, kwargs))
}

/// The argument at `i` or named `name`.
fn arg(pos: &[Value], kw: &Option<Kwargs>, i: usize, name: &str) -> Result<Option<Value>, Error> {
    if let Some(v) = pos.get(i) {
        return Ok(Some(v.clone()));
    }
    match kw {
        Some(kw) if kw.has(name) => Ok(Some(kw.get::<Value>(name)?)),
        _ => Ok(None),
    }
}

fn done(kw: &Option<Kwargs>) -> Result<(), Error> {
    match kw {
        Some(kw) => kw.assert_all_used(),
        None => Ok(()),
    }
}

fn opt_str(v: Option<Value>, method: &str) -> Result<Option<String>, Error> {
    match v {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => match v.as_str() {
            Some(s) => Ok(Some(s.to_string())),
            None => Err(bad_args(
                method,
                &format!("expected a string, found {}", v.kind()),
            )),
        },
    }
}

fn opt_int(v: Option<Value>, method: &str) -> Result<Option<i64>, Error> {
    match v {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) if v.is_integer() || v.kind() == ValueKind::Bool => Ok(Some(i64::try_from(v)?)),
        Some(v) => Err(bad_args(
            method,
            &format!("expected an integer, found {}", v.kind()),
        )),
    }
}

/// The unknown-method callback: Python's methods for the values that lack minijinja ones.
pub fn call(_state: &mut State, value: &Value, name: &str, args: &[Value]) -> Result<Value, Error> {
    let (pos, kw) = split_args(args)?;
    let result = match value.kind() {
        ValueKind::String => str_method(value.as_str().unwrap_or_default(), name, &pos, &kw),
        ValueKind::Map => map_method(value, name, &pos, &kw),
        ValueKind::Seq => seq_method(value, name, &pos, &kw),
        _ => None,
    };
    match result {
        Some(r) => {
            let v = r?;
            done(&kw)?;
            Ok(v)
        }
        None => Err(unknown(value, name)),
    }
}

fn map_method(
    value: &Value,
    name: &str,
    pos: &[Value],
    kw: &Option<Kwargs>,
) -> Option<Result<Value, Error>> {
    Some((|| match name {
        "items" => {
            let mut out = Vec::new();
            for key in value.try_iter()? {
                let v = value.get_item(&key)?;
                out.push(Value::from(vec![key, v]));
            }
            Ok(Value::from(out))
        }
        "keys" => Ok(Value::from(value.try_iter()?.collect::<Vec<_>>())),
        "values" => {
            let mut out = Vec::new();
            for key in value.try_iter()? {
                out.push(value.get_item(&key)?);
            }
            Ok(Value::from(out))
        }
        "get" => {
            let key = arg(pos, kw, 0, "key")?
                .ok_or_else(|| bad_args("get", "expected at least 1 argument, got 0"))?;
            let default = arg(pos, kw, 1, "default")?.unwrap_or(Value::from(()));
            let found = value.get_item(&key)?;
            // A key present with a None value gives None; an absent key the default.
            if found.is_undefined() {
                Ok(default)
            } else {
                Ok(found)
            }
        }
        "copy" => Ok(value.clone()),
        _ => Err(unknown(value, name)),
    })())
    .filter(|r| !matches!(r, Err(e) if e.kind() == ErrorKind::UnknownMethod))
}

fn seq_method(
    value: &Value,
    name: &str,
    pos: &[Value],
    kw: &Option<Kwargs>,
) -> Option<Result<Value, Error>> {
    match name {
        "index" | "count" => Some((|| {
            let x = arg(pos, kw, 0, "value")?
                .ok_or_else(|| bad_args(name, "expected 1 argument, got 0"))?;
            let items: Vec<Value> = value.try_iter()?.collect();
            if name == "count" {
                return Ok(Value::from(items.iter().filter(|v| **v == x).count()));
            }
            match items.iter().position(|v| *v == x) {
                Some(i) => Ok(Value::from(i)),
                None => Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("{} is not in list", python::to_str(&x)?),
                )),
            }
        })()),
        "copy" => Some(Ok(value.clone())),
        _ => None,
    }
}

/// Python's `str.strip(chars)` and its one-sided forms.
pub fn strip(s: &str, chars: Option<&Value>, left: bool, right: bool) -> Result<Value, Error> {
    strip_str(s, chars, left, right).map(Value::from)
}

/// [`strip`], as the part of `s` it keeps.
pub fn strip_str<'a>(
    s: &'a str,
    chars: Option<&Value>,
    left: bool,
    right: bool,
) -> Result<&'a str, Error> {
    let set: Option<Vec<char>> = match chars {
        None => None,
        Some(v) if v.is_none() || v.is_undefined() => None,
        Some(v) => match v.as_str() {
            Some(c) => Some(c.chars().collect()),
            None => {
                return Err(bad_args(
                    "strip",
                    &format!("arg must be None or str, not {}", v.kind()),
                ))
            }
        },
    };
    let is_stripped = |c: char| match &set {
        None => is_py_space(c),
        Some(set) => set.contains(&c),
    };
    let mut t = s;
    if left {
        t = t.trim_start_matches(is_stripped);
    }
    if right {
        t = t.trim_end_matches(is_stripped);
    }
    Ok(t)
}

/// Python's `str.capitalize()`: the first character upper-cased (title-cased), the rest lower.
pub fn capitalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    if let Some(first) = chars.next() {
        out.extend(first.to_uppercase());
    }
    for c in chars {
        out.extend(c.to_lowercase());
    }
    out
}

/// Python's `str.title()`: a cased character after an uncased one is upper-cased, the others
/// lower-cased.
fn py_title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_cased = false;
    for c in s.chars() {
        let cased = c.is_lowercase() || c.is_uppercase();
        if prev_cased {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        prev_cased = cased;
    }
    out
}

/// Python's `str.split(sep=None, maxsplit=-1)`.
fn split(s: &str, sep: Option<&str>, maxsplit: i64) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    let limit = if maxsplit < 0 {
        usize::MAX
    } else {
        count(maxsplit)
    };
    match sep {
        Some("") => return Err(bad_args("split", "empty separator")),
        Some(sep) => {
            let mut rest = s;
            while out.len() < limit {
                match rest.find(sep) {
                    Some(i) => {
                        out.push(Value::from(&rest[..i]));
                        rest = &rest[i + sep.len()..];
                    }
                    None => break,
                }
            }
            out.push(Value::from(rest));
        }
        None => {
            let mut rest = s.trim_start_matches(is_py_space);
            while !rest.is_empty() {
                if out.len() == limit {
                    out.push(Value::from(rest));
                    break;
                }
                let end = rest.find(is_py_space).unwrap_or(rest.len());
                out.push(Value::from(&rest[..end]));
                rest = rest[end..].trim_start_matches(is_py_space);
            }
        }
    }
    Ok(out)
}

/// Python's `str.rsplit(sep=None, maxsplit=-1)`.
fn rsplit(s: &str, sep: Option<&str>, maxsplit: i64) -> Result<Vec<Value>, Error> {
    if maxsplit < 0 {
        return split(s, sep, maxsplit);
    }
    let limit = count(maxsplit);
    let mut out = Vec::new();
    match sep {
        Some("") => return Err(bad_args("rsplit", "empty separator")),
        Some(sep) => {
            let mut rest = s;
            while out.len() < limit {
                match rest.rfind(sep) {
                    Some(i) => {
                        out.push(Value::from(&rest[i + sep.len()..]));
                        rest = &rest[..i];
                    }
                    None => break,
                }
            }
            out.push(Value::from(rest));
        }
        None => {
            let mut rest = s.trim_end_matches(is_py_space);
            while !rest.is_empty() {
                if out.len() == limit {
                    out.push(Value::from(rest));
                    break;
                }
                let start = rest.rfind(is_py_space).map_or(0, |i| {
                    i + rest[i..].chars().next().map_or(1, char::len_utf8)
                });
                out.push(Value::from(&rest[start..]));
                rest = rest[..start].trim_end_matches(is_py_space);
            }
        }
    }
    out.reverse();
    Ok(out)
}

/// Python's line boundaries for `splitlines`.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{b}'
            | '\u{c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

fn splitlines(s: &str, keepends: bool) -> Vec<Value> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut iter = s.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if is_line_break(c) {
            let mut end = i + c.len_utf8();
            if c == '\r' {
                if let Some(&(_, '\n')) = iter.peek() {
                    iter.next();
                    end += 1;
                }
            }
            out.push(Value::from(if keepends {
                &s[start..end]
            } else {
                &s[start..i]
            }));
            start = end;
        }
    }
    if start < s.len() {
        out.push(Value::from(&s[start..]));
    }
    out
}

/// The code-point slice `[start:end]` of Python's optional start and end arguments, as byte
/// offsets.
fn char_range(s: &str, start: Option<i64>, end: Option<i64>) -> (usize, usize) {
    let n = s.chars().count() as i64;
    let clamp = |i: i64| if i < 0 { (i + n).max(0) } else { i.min(n) };
    let a = clamp(start.unwrap_or(0));
    let b = clamp(end.unwrap_or(n));
    let byte = |ci: i64| s.char_indices().nth(count(ci)).map_or(s.len(), |(b, _)| b);
    if a >= b {
        let x = byte(a);
        (x, x)
    } else {
        (byte(a), byte(b))
    }
}

/// A prefix argument of `startswith`/`endswith`: one string or a tuple (list) of them.
fn affixes(v: &Value, name: &str) -> Result<Vec<String>, Error> {
    if let Some(s) = v.as_str() {
        return Ok(vec![s.to_string()]);
    }
    if v.kind() == ValueKind::Seq {
        let mut out = Vec::new();
        for item in v.try_iter()? {
            match item.as_str() {
                Some(s) => out.push(s.to_string()),
                None => {
                    return Err(bad_args(
                        name,
                        "a tuple for startswith/endswith must only contain str",
                    ))
                }
            }
        }
        return Ok(out);
    }
    Err(bad_args(
        name,
        &format!("first arg must be str or a tuple of str, not {}", v.kind()),
    ))
}

fn str_method(
    s: &str,
    name: &str,
    pos: &[Value],
    kw: &Option<Kwargs>,
) -> Option<Result<Value, Error>> {
    let r = (|| -> Result<Value, Error> {
        match name {
            "strip" | "lstrip" | "rstrip" => {
                let chars = arg(pos, kw, 0, "chars")?;
                strip(s, chars.as_ref(), name != "rstrip", name != "lstrip")
            }
            "split" | "rsplit" => {
                let sep = opt_str(arg(pos, kw, 0, "sep")?, name)?;
                let maxsplit = opt_int(arg(pos, kw, 1, "maxsplit")?, name)?.unwrap_or(-1);
                let parts = if name == "split" {
                    split(s, sep.as_deref(), maxsplit)?
                } else {
                    rsplit(s, sep.as_deref(), maxsplit)?
                };
                Ok(Value::from(parts))
            }
            "splitlines" => {
                let keep = arg(pos, kw, 0, "keepends")?.is_some_and(|v| v.is_true());
                Ok(Value::from(splitlines(s, keep)))
            }
            "startswith" | "endswith" => {
                let what = arg(pos, kw, 0, "prefix")?
                    .ok_or_else(|| bad_args(name, "takes at least 1 argument (0 given)"))?;
                let start = opt_int(arg(pos, kw, 1, "start")?, name)?;
                let end = opt_int(arg(pos, kw, 2, "end")?, name)?;
                let (a, b) = char_range(s, start, end);
                let region = &s[a..b];
                let hit = affixes(&what, name)?.iter().any(|x| {
                    if name == "startswith" {
                        region.starts_with(x.as_str())
                    } else {
                        region.ends_with(x.as_str())
                    }
                });
                Ok(Value::from(hit))
            }
            "replace" => {
                let old = opt_str(arg(pos, kw, 0, "old")?, name)?
                    .ok_or_else(|| bad_args(name, "expected at least 2 arguments"))?;
                let new = opt_str(arg(pos, kw, 1, "new")?, name)?
                    .ok_or_else(|| bad_args(name, "expected at least 2 arguments"))?;
                let count = opt_int(arg(pos, kw, 2, "count")?, name)?.unwrap_or(-1);
                if count < 0 {
                    if old.is_empty() {
                        // Python puts the new text between every character and at both ends.
                        let mut out = new.clone();
                        for c in s.chars() {
                            out.push(c);
                            out.push_str(&new);
                        }
                        return Ok(Value::from(out));
                    }
                    Ok(Value::from(s.replace(&old, &new)))
                } else {
                    Ok(Value::from(s.replacen(&old, &new, self::count(count))))
                }
            }
            "upper" => Ok(Value::from(s.to_uppercase())),
            "lower" => Ok(Value::from(s.to_lowercase())),
            "casefold" => Ok(Value::from(s.to_lowercase())),
            "swapcase" => Ok(Value::from(
                s.chars()
                    .flat_map(|c| -> Vec<char> {
                        if c.is_uppercase() {
                            c.to_lowercase().collect()
                        } else if c.is_lowercase() {
                            c.to_uppercase().collect()
                        } else {
                            vec![c]
                        }
                    })
                    .collect::<String>(),
            )),
            "title" => Ok(Value::from(py_title(s))),
            "capitalize" => Ok(Value::from(capitalize(s))),
            "find" | "rfind" | "index" | "rindex" | "count" => {
                let sub = opt_str(arg(pos, kw, 0, "sub")?, name)?
                    .ok_or_else(|| bad_args(name, "takes at least 1 argument (0 given)"))?;
                let start = opt_int(arg(pos, kw, 1, "start")?, name)?;
                let end = opt_int(arg(pos, kw, 2, "end")?, name)?;
                let (a, b) = char_range(s, start, end);
                let region = &s[a..b];
                if name == "count" {
                    let n = if sub.is_empty() {
                        region.chars().count() + 1
                    } else {
                        region.matches(sub.as_str()).count()
                    };
                    return Ok(Value::from(n));
                }
                let found = if name.starts_with('r') {
                    region.rfind(sub.as_str())
                } else {
                    region.find(sub.as_str())
                };
                match found {
                    Some(i) => Ok(Value::from(s[..a + i].chars().count())),
                    None if name.ends_with("find") => Ok(Value::from(-1)),
                    None => Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "substring not found",
                    )),
                }
            }
            "join" => {
                let items = arg(pos, kw, 0, "iterable")?
                    .ok_or_else(|| bad_args(name, "takes exactly one argument (0 given)"))?;
                let mut out = String::new();
                let list: Vec<Value> = match items.as_str() {
                    Some(t) => t.chars().map(|c| Value::from(c.to_string())).collect(),
                    None => items.try_iter()?.collect(),
                };
                for (i, item) in list.iter().enumerate() {
                    if i > 0 {
                        out.push_str(s);
                    }
                    match item.as_str() {
                        Some(t) => out.push_str(t),
                        None => {
                            return Err(Error::new(
                                ErrorKind::InvalidOperation,
                                format!(
                                    "sequence item {i}: expected str instance, {} found",
                                    item.kind()
                                ),
                            ))
                        }
                    }
                }
                Ok(Value::from(out))
            }
            "removeprefix" | "removesuffix" => {
                let x = opt_str(arg(pos, kw, 0, "prefix")?, name)?
                    .ok_or_else(|| bad_args(name, "takes exactly one argument (0 given)"))?;
                let t = if name == "removeprefix" {
                    s.strip_prefix(x.as_str()).unwrap_or(s)
                } else {
                    s.strip_suffix(x.as_str()).unwrap_or(s)
                };
                Ok(Value::from(t))
            }
            "partition" | "rpartition" => {
                let sep = opt_str(arg(pos, kw, 0, "sep")?, name)?
                    .ok_or_else(|| bad_args(name, "takes exactly one argument (0 given)"))?;
                if sep.is_empty() {
                    return Err(bad_args(name, "empty separator"));
                }
                let found = if name == "partition" {
                    s.find(sep.as_str())
                } else {
                    s.rfind(sep.as_str())
                };
                let parts = match found {
                    Some(i) => [&s[..i], sep.as_str(), &s[i + sep.len()..]],
                    None if name == "partition" => [s, "", ""],
                    None => ["", "", s],
                };
                Ok(Value::from(
                    parts.iter().map(|p| Value::from(*p)).collect::<Vec<_>>(),
                ))
            }
            "isdigit" | "isnumeric" | "isdecimal" => Ok(Value::from(
                !s.is_empty() && s.chars().all(|c| c.is_numeric()),
            )),
            "isalpha" => Ok(Value::from(
                !s.is_empty() && s.chars().all(char::is_alphabetic),
            )),
            "isalnum" => Ok(Value::from(
                !s.is_empty() && s.chars().all(char::is_alphanumeric),
            )),
            "isspace" => Ok(Value::from(!s.is_empty() && s.chars().all(is_py_space))),
            "isupper" | "islower" => {
                let want_upper = name == "isupper";
                let mut cased = false;
                for c in s.chars() {
                    if c.is_uppercase() || c.is_lowercase() {
                        cased = true;
                        if c.is_uppercase() != want_upper {
                            return Ok(Value::from(false));
                        }
                    }
                }
                Ok(Value::from(cased))
            }
            "zfill" => {
                let width = count(opt_int(arg(pos, kw, 0, "width")?, name)?.unwrap_or(0));
                let n = s.chars().count();
                if n >= width {
                    return Ok(Value::from(s));
                }
                let (sign, digits) = match s.chars().next() {
                    Some(c @ ('+' | '-')) => (c.to_string(), &s[1..]),
                    _ => (String::new(), s),
                };
                Ok(Value::from(format!(
                    "{sign}{}{digits}",
                    "0".repeat(width - n)
                )))
            }
            "ljust" | "rjust" | "center" => {
                let width = count(opt_int(arg(pos, kw, 0, "width")?, name)?.unwrap_or(0));
                let fill = opt_str(arg(pos, kw, 1, "fillchar")?, name)?.unwrap_or(" ".into());
                let n = s.chars().count();
                if n >= width || width > 1 << 20 {
                    return Ok(Value::from(s));
                }
                let pad = width - n;
                let (l, r) = match name {
                    "ljust" => (0, pad),
                    "rjust" => (pad, 0),
                    // CPython's center puts the odd space on the left when the width is odd.
                    _ => {
                        let l = pad / 2 + (pad & width & 1);
                        (l, pad - l)
                    }
                };
                Ok(Value::from(format!(
                    "{}{s}{}",
                    fill.repeat(l),
                    fill.repeat(r)
                )))
            }
            "format" => {
                let mut out = String::new();
                format(&mut out, s, pos, kw)?;
                Ok(Value::from(out))
            }
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    })();
    match r {
        Err(e) if e.kind() == ErrorKind::UnknownMethod => None,
        r => Some(r),
    }
}

/// `str.format` for the fields templates use: `{}`, `{0}`, `{name}` (no format specs beyond
/// none), with `{{` and `}}` for braces.
fn format(out: &mut String, s: &str, pos: &[Value], kw: &Option<Kwargs>) -> Result<(), Error> {
    let mut auto = 0usize;
    let mut chars = s.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        match c {
            '{' if chars.peek().map(|p| p.1) == Some('{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek().map(|p| p.1) == Some('}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut field = String::new();
                loop {
                    match chars.next() {
                        Some((_, '}')) => break,
                        Some((_, c)) => field.push(c),
                        None => {
                            return Err(bad_args(
                                "format",
                                "Single '{' encountered in format string",
                            ))
                        }
                    }
                }
                let value = if field.is_empty() {
                    auto += 1;
                    pos.get(auto - 1).cloned()
                } else if let Ok(i) = field.parse::<usize>() {
                    pos.get(i).cloned()
                } else {
                    match kw {
                        Some(kw) if kw.has(&field) => Some(kw.get::<Value>(&field)?),
                        _ => None,
                    }
                };
                match value {
                    Some(v) => python::write_str(out, &v)?,
                    None => {
                        return Err(bad_args(
                            "format",
                            &format!("no argument for the field {{{field}}}"),
                        ))
                    }
                }
            }
            '}' => {
                return Err(bad_args(
                    "format",
                    "Single '}' encountered in format string",
                ))
            }
            c => out.push(c),
        }
    }
    Ok(())
}
