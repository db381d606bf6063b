//! The template environment: minijinja set up as transformers sets up jinja2 (an immutable
//! sandbox with `trim_blocks`, `lstrip_blocks` and loop controls; its `tojson`,
//! `raise_exception`, `strftime_now`, `dict` and `namespace`), with values printed and converted
//! as Python does, and the bounds that keep a stranger's template from running away.

use super::methods;
use super::objects;
use super::python::{self, JsonStyle};
use super::time;
use minijinja::value::{Kwargs, Rest, Value, ValueKind, ValueOrKwargs};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, State, UndefinedBehavior};

/// The work one render may do, in minijinja's fuel (about one unit an instruction, and one for
/// every 64 bytes written): under a second for the worst runaway loop, far more than
/// any conversation needs (the most a template of the tests takes over its conversations is
/// under 200,000). It also bounds the memory a template can fill (about 64 bytes a unit).
pub const FUEL: u64 = 5_000_000;

/// How deeply macros and recursive loops may call themselves.
pub const MAX_RECURSION: usize = 200;

/// Marks an error raised by the template itself (`raise_exception`), so that its message is
/// passed on as the template wrote it.
#[derive(Debug)]
pub struct Raised(pub String);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

/// Registers minijinja's filter `$filter` under `$name` as jinja2 has it: a falsy value gives
/// nothing, and the result is a generator. Each `|arg: Type| conversion` is one argument between
/// the value and the rest, converted to what minijinja's filter takes.
macro_rules! generator_filter {
    ($env:ident, $name:literal, $filter:ident $(, |$arg:ident: $ty:ty| $conv:expr)*) => {
        $env.add_filter(
            $name,
            |state: &mut State, v: Value, $($arg: $ty,)* args: Rest<ValueOrKwargs>| {
                generator(minijinja::filters::$filter(state, falsy_empty(v), $($conv,)* args))
            },
        )
    };
}

/// A new environment for one template.
pub fn new() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(false)
            .build()
            .expect("the default delimiters are valid"),
    );
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_debug(false);
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(MAX_RECURSION);
    env.set_formatter(|out, _state, value| {
        // A string is written as it is (the common case: no copy).
        if value.kind() == ValueKind::String {
            return out
                .write_str(value.as_str().unwrap_or_default())
                .map_err(|_| Error::from(ErrorKind::WriteFailure));
        }
        let mut s = String::new();
        python::write_str(&mut s, value)?;
        out.write_str(&s)
            .map_err(|_| Error::from(ErrorKind::WriteFailure))
    });
    env.set_unknown_method_callback(methods::call);
    // No loader: `include`, `import` and `extends` find nothing. jinja2 has no `debug()`, which
    // would print the whole context.
    env.remove_global("debug");

    env.add_filter("tojson", tojson);
    env.add_filter("string", |v: Value| {
        if v.kind() == ValueKind::String {
            return Ok(v);
        }
        python::to_str(&v).map(Value::from)
    });
    env.add_filter("join", join);
    env.add_filter("trim", |v: Value, chars: Option<Value>| {
        let Some(s) = v.as_str().filter(|_| v.kind() == ValueKind::String) else {
            return methods::strip(&python::to_str(&v)?, chars.as_ref(), true, true);
        };
        let t = methods::strip_str(s, chars.as_ref(), true, true)?;
        // A string without the stripped characters is itself (no copy).
        if t.len() == s.len() {
            return Ok(v.clone());
        }
        Ok(Value::from(t))
    });
    env.add_filter("title", title);
    env.add_filter("capitalize", |v: Value| {
        Ok::<_, Error>(Value::from(methods::capitalize(&python::to_str(&v)?)))
    });
    env.add_filter("upper", |v: Value| {
        Ok::<_, Error>(Value::from(python::to_str(&v)?.to_uppercase()))
    });
    env.add_filter("lower", |v: Value| {
        Ok::<_, Error>(Value::from(python::to_str(&v)?.to_lowercase()))
    });

    env.add_function(
        "raise_exception",
        |message: Value| -> Result<Value, Error> {
            let text = python::to_str(&message)?;
            Err(Error::new(ErrorKind::InvalidOperation, text.clone()).with_source(Raised(text)))
        },
    );
    env.add_function("strftime_now", |format: String| {
        time::strftime_now(&format).map(Value::from)
    });
    env.add_function("namespace", namespace);
    // jinja2's select, reject, selectattr, rejectattr and map skip a falsy value (None gives
    // nothing) and return generators, which tojson refuses and len() cannot measure.
    generator_filter!(env, "select", select, |test: Option<String>| test
        .map(Into::into));
    generator_filter!(env, "reject", reject, |test: Option<String>| test
        .map(Into::into));
    generator_filter!(
        env,
        "selectattr",
        selectattr,
        |attr: String| attr.into(),
        |test: Option<String>| test.map(Into::into)
    );
    generator_filter!(
        env,
        "rejectattr",
        rejectattr,
        |attr: String| attr.into(),
        |test: Option<String>| test.map(Into::into)
    );
    generator_filter!(env, "map", map);
    env.add_test("none", |v: Value| objects::is_none(&v));
    env.add_test("number", |v: Value| {
        v.kind() == ValueKind::Number || objects::as_float(&v).is_some()
    });
    env.add_test("float", |v: Value| {
        (v.kind() == ValueKind::Number && !v.is_integer()) || objects::as_float(&v).is_some()
    });
    env
}

/// A falsy value as the empty list jinja2's filters make of it.
fn falsy_empty(v: Value) -> Value {
    if v.is_true() {
        v
    } else {
        Value::from(Vec::<Value>::new())
    }
}

/// A filter's items as a generator: iterable once, of unknown length.
fn generator(items: Result<Vec<Value>, Error>) -> Result<Value, Error> {
    Ok(Value::make_one_shot_iterator(items?.into_iter()))
}

/// transformers' `tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`:
/// `json.dumps` with those arguments.
fn tojson(value: Value, args: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let positional = args.0;
    let kwargs = Some(kwargs);
    const NAMES: [&str; 4] = ["ensure_ascii", "indent", "separators", "sort_keys"];
    if positional.len() > NAMES.len() {
        return Err(Error::new(
            ErrorKind::TooManyArguments,
            format!(
                "tojson() takes from 1 to 5 positional arguments but {} were given",
                positional.len() + 1
            ),
        ));
    }
    let mut given: [Option<Value>; 4] = Default::default();
    for (i, v) in positional.into_iter().enumerate() {
        given[i] = Some(v);
    }
    if let Some(kw) = &kwargs {
        for key in kw.args() {
            let Some(i) = NAMES.iter().position(|n| *n == key) else {
                return Err(Error::new(
                    ErrorKind::TooManyArguments,
                    format!("tojson() got an unexpected keyword argument '{key}'"),
                ));
            };
            if given[i].is_some() {
                return Err(Error::new(
                    ErrorKind::TooManyArguments,
                    format!("tojson() got multiple values for argument '{key}'"),
                ));
            }
            given[i] = Some(kw.get::<Value>(key)?);
        }
    }
    let [ensure_ascii, indent, separators, sort_keys] = given;
    let mut style = JsonStyle {
        ensure_ascii: ensure_ascii.is_some_and(|v| v.is_true()),
        sort_keys: sort_keys.is_some_and(|v| v.is_true()),
        ..JsonStyle::default()
    };
    match indent {
        None => {}
        Some(v) if v.is_none() => {}
        Some(v) if v.kind() == ValueKind::String => {
            style.indent = Some(v.as_str().unwrap_or_default().to_string())
        }
        Some(v) if v.is_integer() => {
            let n = i64::try_from(v)?.clamp(0, 10_000);
            style.indent = Some(" ".repeat(n as usize));
        }
        Some(v) => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "tojson's indent must be an integer or a string, not {}",
                    v.kind()
                ),
            ))
        }
    }
    if style.indent.is_some() {
        style.item_sep = ",".into();
    }
    match separators {
        None => {}
        Some(v) if v.is_none() => {}
        Some(v) => {
            let parts: Vec<Value> = v.try_iter()?.collect();
            match parts.as_slice() {
                [a, b] if a.as_str().is_some() && b.as_str().is_some() => {
                    style.item_sep = a.as_str().unwrap_or_default().to_string();
                    style.key_sep = b.as_str().unwrap_or_default().to_string();
                }
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "tojson's separators must be two strings (item separator, key separator)",
                    ))
                }
            }
        }
    }
    python::json_dumps(&value, &style).map(Value::from)
}

/// jinja2's `join(value, d='', attribute=None)`: `str(d).join(map(str, items))`.
fn join(value: Value, d: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let sep = match &d {
        Some(d) => python::to_str(d)?,
        None => String::new(),
    };
    let attribute: Option<Value> = kwargs.get("attribute")?;
    kwargs.assert_all_used()?;
    if value.is_undefined() {
        return Ok(Value::from(""));
    }
    let mut out = String::new();
    let items: Box<dyn Iterator<Item = Value>> = if let Some(s) = value.as_str() {
        Box::new(
            s.chars()
                .map(|c| Value::from(c.to_string()))
                .collect::<Vec<_>>()
                .into_iter(),
        )
    } else {
        Box::new(value.try_iter()?)
    };
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push_str(&sep);
        }
        let item = match &attribute {
            Some(a) => attribute_of(&item, a)?,
            None => item,
        };
        python::write_str(&mut out, &item)?;
    }
    Ok(Value::from(out))
}

/// jinja2's `attribute=` argument: a dotted path of attribute names and indices.
fn attribute_of(item: &Value, path: &Value) -> Result<Value, Error> {
    if path.is_integer() {
        return item.get_item(path);
    }
    let mut v = item.clone();
    for part in python::to_str(path)?.split('.') {
        v = match part.parse::<i64>() {
            Ok(i) => v.get_item(&Value::from(i))?,
            Err(_) => v.get_attr(part)?,
        };
    }
    Ok(v)
}

/// jinja2's `title`: each word (split after `-`, whitespace and opening brackets) with its
/// first character upper-cased and the rest lower-cased.
fn title(value: Value) -> Result<Value, Error> {
    let s = python::to_str(&value)?;
    let mut out = String::with_capacity(s.len());
    let mut at_start = true;
    for c in s.chars() {
        let boundary = c == '-' || methods::is_py_space(c) || "({[<".contains(c);
        if boundary {
            out.push(c);
            at_start = true;
        } else if at_start {
            out.extend(c.to_uppercase());
            at_start = false;
        } else {
            out.extend(c.to_lowercase());
        }
    }
    Ok(Value::from(out))
}

/// transformers' namespace: jinja2's, refusing attributes whose names start with `_`.
fn namespace(defaults: Option<ValueOrKwargs>) -> Result<Value, Error> {
    let Some(defaults) = defaults else {
        return minijinja::functions::namespace(None);
    };
    let map = defaults.into_value();
    if map.kind() == ValueKind::Map {
        for key in map.try_iter()? {
            if key.as_str().is_some_and(|k| k.starts_with('_')) {
                let mut name = String::new();
                python::write_repr(&mut name, &key, 0)?;
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!(
                        "Chat templates cannot store underscore-prefixed attributes on a \
                         namespace, but got {name}. Please rename the attribute."
                    ),
                ));
            }
        }
    }
    minijinja::functions::namespace(Some(ValueOrKwargs::from(map)))
}
