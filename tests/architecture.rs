//! ARCHITECTURE.md is true: every file under `src/` is named there, and imports run one way down
//! its table of layers (a module refers, outside its test code, only to modules of its own layer
//! or the layers above, and no two modules refer to each other).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/a/b.rs` -> `a`: the top-level module a file belongs to (`None` for `src/lib.rs`).
fn top_module(rel: &str) -> Option<String> {
    let inner = rel.strip_prefix("src/")?;
    let first = inner.split('/').next()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib").then(|| name.to_string())
}

/// The file's text without its test code: everything from the first `#[cfg(test)]` or
/// `#[cfg(all(test, ...))]` on (the crate keeps its unit tests at the end of each file).
fn without_tests(text: &str) -> &str {
    let cut = ["#[cfg(test)]", "#[cfg(all(test"]
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .unwrap_or(text.len());
    &text[..cut]
}

/// The modules `text` refers to as `crate::NAME`.
fn references(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// The layer table of ARCHITECTURE.md: each file it names (in backquotes in the module column)
/// with its layer number.
fn layers() -> BTreeMap<String, u32> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let layer = match cells[1]
            .split(' ')
            .next()
            .and_then(|n| n.parse::<u32>().ok())
        {
            Some(n) => n,
            None if cells[1] == "crate root" => 0,
            None => continue,
        };
        for file in cells[2].split('`').skip(1).step_by(2) {
            if file.starts_with("src/") {
                out.insert(file.to_string(), layer);
            }
        }
    }
    out
}

#[test]
fn every_source_file_is_named_in_architecture_md() {
    let named = layers();
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let root = root();
    let missing: Vec<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .filter(|rel| !named.contains_key(rel))
        .collect();
    assert!(
        missing.is_empty(),
        "files under src/ not named in ARCHITECTURE.md: {missing:?}"
    );
    let gone: Vec<&String> = named.keys().filter(|f| !root.join(f).exists()).collect();
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md names files that do not exist: {gone:?}"
    );
}

#[test]
fn imports_run_one_way() {
    let named = layers();
    let root = root();
    // Each top-level module's layer (all its files are in one) and what it refers to.
    let mut layer_of: BTreeMap<String, u32> = BTreeMap::new();
    let mut refers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, &layer) in &named {
        let Some(module) = top_module(file) else {
            continue;
        };
        // (A file named but missing is the other test's failure.)
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        if let Some(&other) = layer_of.get(&module) {
            assert_eq!(
                other, layer,
                "the files of module `{module}` are in different layers in ARCHITECTURE.md"
            );
        }
        layer_of.insert(module.clone(), layer);
        let mut used = references(without_tests(&text));
        used.remove(&module);
        refers.entry(module).or_default().extend(used);
    }
    let mut wrong = Vec::new();
    for (module, used) in &refers {
        for other in used {
            // `crate::Name` of a re-exported item (a type at the crate root) is not a module.
            let Some(&to) = layer_of.get(other) else {
                continue;
            };
            if to > layer_of[module] {
                wrong.push(format!(
                    "{module} (layer {}) uses {other} (layer {to})",
                    layer_of[module]
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layers: {wrong:#?}");
    // No circle: repeatedly remove modules that use nothing left.
    let mut left: BTreeMap<&String, BTreeSet<&String>> = refers
        .iter()
        .map(|(m, used)| (m, used.iter().filter(|u| refers.contains_key(*u)).collect()))
        .collect();
    loop {
        let done: Vec<&String> = left
            .iter()
            .filter(|(_, used)| used.is_empty())
            .map(|(m, _)| *m)
            .collect();
        if done.is_empty() {
            break;
        }
        for m in &done {
            left.remove(m);
        }
        for used in left.values_mut() {
            for m in &done {
                used.remove(m);
            }
        }
    }
    assert!(left.is_empty(), "modules that import each other: {left:#?}");
}
