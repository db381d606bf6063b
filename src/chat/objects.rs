//! Values that minijinja would treat otherwise than Python, kept as objects that behave as the
//! Python values do:
//!
//! - [`PyNone`]: the `None` transformers passes for absent `tools` and `documents`. minijinja
//!   iterates `none` as an empty list; Python refuses (`'NoneType' object is not iterable`), and
//!   templates that loop over `tools` unconditionally fail in transformers.
//! - [`PyFloat`]: a request's float whose `str()` Python writes in exponent form (`1e-07`,
//!   `1e+21`): minijinja's own text for it (`0.0000001`) would show wherever it is joined to a
//!   string with `~`. Floats in the usual range need no object: both write the same digits.

use super::float;
use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use std::fmt;
use std::sync::Arc;

/// Python's `None` where a template may try to iterate it.
#[derive(Debug)]
pub struct PyNone;

impl Object for PyNone {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::NonEnumerable
    }

    fn is_true(self: &Arc<Self>) -> bool {
        false
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("None")
    }
}

/// A float Python writes in exponent form.
#[derive(Debug)]
pub struct PyFloat(pub f64);

impl Object for PyFloat {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::NonEnumerable
    }

    fn is_true(self: &Arc<Self>) -> bool {
        self.0 != 0.0
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        float::write_float(&mut s, self.0, "inf", "nan");
        f.write_str(&s)
    }
}

/// The template's value for a float of the request.
pub fn float(f: f64) -> Value {
    let a = f.abs();
    if f.is_finite() && (a == 0.0 || (1e-4..1e16).contains(&a)) {
        Value::from(f)
    } else {
        Value::from_object(PyFloat(f))
    }
}

/// Python's `None` as the template's value of an absent `tools` or `documents`.
pub fn none() -> Value {
    Value::from_object(PyNone)
}

/// Whether `v` is Python's `None` (minijinja's or [`PyNone`]).
pub fn is_none(v: &Value) -> bool {
    v.is_none() || v.downcast_object_ref::<PyNone>().is_some()
}

/// The float behind `v`, whether minijinja's or a [`PyFloat`].
pub fn as_float(v: &Value) -> Option<f64> {
    v.downcast_object_ref::<PyFloat>().map(|p| p.0)
}
