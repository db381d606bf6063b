//! The request's JSON objects as template maps: their entries in order in one vector, a key
//! found by a scan of the entries (a message has a handful) or, past [`SCANNED_KEYS`], by an
//! index. minijinja's own map (an `IndexMap` with a SipHash index) costs more to build and to
//! drop than a render spends reading it; to the template both are the same map.

use minijinja::value::{Enumerator, Object, ObjectExt, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// Maps with up to this many keys find a key by scanning them.
pub const SCANNED_KEYS: usize = 16;

/// A map of the request: keys in order, each once.
#[derive(Debug)]
pub struct Map {
    entries: Vec<(Value, Value)>,
    /// Past [`SCANNED_KEYS`] keys: where each key is in `entries`.
    index: Option<HashMap<Value, usize>>,
}

impl Map {
    /// A map of these entries, whose keys are distinct; `index`, where given, finds each key's
    /// entry.
    pub fn new(entries: Vec<(Value, Value)>, index: Option<HashMap<Value, usize>>) -> Map {
        let index = match index {
            Some(i) => Some(i),
            None if entries.len() > SCANNED_KEYS => Some(
                entries
                    .iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.clone(), i))
                    .collect(),
            ),
            None => None,
        };
        Map { entries, index }
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[(Value, Value)] {
        &self.entries
    }

    fn find(&self, key: &Value) -> Option<&Value> {
        match (&self.index, key.as_str()) {
            (Some(index), _) => index.get(key).map(|&i| &self.entries[i].1),
            // A string equals only a string of the same text (compared as text: minijinja's
            // equality of two strings stored differently goes the long way round).
            (None, Some(s)) => self
                .entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(s))
                .map(|(_, v)| v),
            (None, None) => self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
        }
    }
}

impl Object for Map {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.find(key).cloned()
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        if self.index.is_some() {
            return self.find(&Value::from(key)).cloned();
        }
        self.entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v.clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.mapped_rev_key_value_enumerator(|this| {
            Box::new(this.entries.iter().map(|(k, v)| (k.clone(), v.clone())))
        })
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// The template's value of a map of the request.
pub fn value(entries: Vec<(Value, Value)>, index: Option<HashMap<Value, usize>>) -> Value {
    Value::from_object(Map::new(entries, index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_indexed_maps_find_their_keys_and_keep_their_order() {
        for n in [3, 40] {
            let entries: Vec<(Value, Value)> = (0..n)
                .map(|i| (Value::from(format!("k{i}")), Value::from(i)))
                .collect();
            let v = value(entries, None);
            assert_eq!(v.get_attr("k2").unwrap(), Value::from(2));
            assert!(v.get_attr("nope").unwrap().is_undefined());
            let keys: Vec<String> = v.try_iter().unwrap().map(|k| k.to_string()).collect();
            assert_eq!(keys.len(), n as usize);
            assert_eq!(keys[1], "k1");
            assert_eq!(v.len(), Some(n as usize));
            let same = Value::from_pairs((0..n).rev().map(|i| (format!("k{i}"), i)));
            assert_eq!(v, same, "equal to minijinja's map of the same entries");
        }
    }
}
