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
    let left = in_or_behind_circles(
        refers
            .iter()
            .map(|(m, used)| (m, used.iter().filter(|u| refers.contains_key(*u)).collect()))
            .collect(),
    );
    assert!(left.is_empty(), "modules that import each other: {left:#?}");
}

/// `src/a/b.rs` -> `["a", "b"]`, `src/a/mod.rs` -> `["a"]`, `src/lib.rs` -> `[]`: the module
/// path a file defines.
fn module_path(rel: &str) -> Vec<String> {
    let inner = rel.strip_prefix("src/").unwrap_or(rel);
    let inner = inner.strip_suffix(".rs").unwrap_or(inner);
    let mut parts: Vec<String> = inner.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The text without `//` comments (doc links name paths that the code does not use).
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.find("//").map_or(line, |i| &line[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths a `use` tree names, each as its segments (`a::{b, c::d}` -> `a::b`, `a::c::d`).
fn use_tree(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(inner) = tree.strip_prefix('{') {
        let inner = inner.strip_suffix('}').unwrap_or(inner);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    use_tree(&inner[start..i], prefix, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        use_tree(&inner[start..], prefix, out);
        return;
    }
    match tree.split_once("::") {
        Some((head, rest)) => {
            let mut next = prefix.to_vec();
            next.push(head.trim().to_string());
            use_tree(rest, &next, out);
        }
        None => {
            let name = tree.split(" as ").next().unwrap_or("").trim();
            let mut path = prefix.to_vec();
            if name != "*" && name != "self" && !name.is_empty() {
                path.push(name.to_string());
            }
            out.push(path);
        }
    }
}

/// Every path the code of a file names: the trees of its `use` declarations, and each
/// `crate::`, `super::`, `self::` or `CHILD::` path elsewhere (`CHILD` a module the file
/// declares with `mod CHILD;`).
fn named_paths(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `use` declarations.
    let mut rest = text;
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "use ".len()..];
        if before.is_some_and(is_ident) {
            continue;
        }
        let Some(end) = rest.find(';') else { break };
        let tree: String = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        use_tree(
            &tree.replace(":: ", "::").replace(" ::", "::"),
            &[],
            &mut out,
        );
        rest = &rest[end..];
    }
    // Child modules the file declares.
    let mut children = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
        let line = line.strip_prefix("pub ").unwrap_or(line);
        if let Some(name) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) {
            children.insert(name.trim().to_string());
        }
    }
    // Paths in code.
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        let starts = is_ident(c) && (i == 0 || !is_ident(chars[i - 1].1) && chars[i - 1].1 != ':');
        if !starts {
            i += 1;
            continue;
        }
        let tail = &text[at..];
        let path: Vec<String> = {
            let mut segs = Vec::new();
            let mut t = tail;
            loop {
                let name: String = t.chars().take_while(|c| is_ident(*c)).collect();
                if name.is_empty() {
                    break;
                }
                t = &t[name.len()..];
                segs.push(name);
                match t.strip_prefix("::") {
                    Some(r) => t = r,
                    None => break,
                }
            }
            segs
        };
        let len: usize = path.iter().map(String::len).sum::<usize>() + 2 * path.len();
        if path.len() >= 2
            && (["crate", "super", "self"].contains(&path[0].as_str())
                || children.contains(&path[0]))
        {
            out.push(path);
        }
        // Skip what was read.
        let end = at + len.max(1);
        while i < chars.len() && chars[i].0 < end {
            i += 1;
        }
    }
    out
}

/// The file a path names, from the file with module path `here`: the file of the longest
/// prefix of the path that is a module (an item of a module is in that module's file).
fn resolve<'a>(
    path: &[String],
    here: &[String],
    files: &'a BTreeMap<Vec<String>, String>,
) -> Option<&'a String> {
    let mut abs: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super") | Some("self") => here.to_vec(),
        // A bare first segment: a module below this one (an external crate resolves to none).
        _ => {
            let mut child = here.to_vec();
            child.push(path.first()?.clone());
            if !files.contains_key(&child) {
                return None;
            }
            here.to_vec()
        }
    };
    let mut segs = path;
    if segs.first().is_some_and(|s| s == "crate" || s == "self") {
        segs = &segs[1..];
    }
    while segs.first().is_some_and(|s| s == "super") {
        abs.pop()?;
        segs = &segs[1..];
    }
    abs.extend(segs.iter().cloned());
    (0..=abs.len()).rev().find_map(|n| files.get(&abs[..n]))
}

#[test]
fn no_files_of_a_module_import_each_other() {
    let root = root();
    let mut paths = Vec::new();
    rust_files(&root.join("src"), &mut paths);
    let mut files: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for p in &paths {
        let rel = p
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        files.insert(module_path(&rel), rel);
    }
    // Edges between files of one top-level module (between top-level modules, the test
    // above speaks).
    let mut uses: BTreeMap<&String, BTreeSet<&String>> = BTreeMap::new();
    for (here, file) in &files {
        if here.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let code = without_comments(without_tests(&text));
        let entry = uses.entry(file).or_default();
        for path in named_paths(&code) {
            let Some(target) = resolve(&path, here, &files) else {
                continue;
            };
            if target != file && top_module(target) == top_module(file) {
                entry.insert(target);
            }
        }
    }
    // Remove files that use nothing left; what stays is in or behind a circle.
    let left = in_or_behind_circles(uses);
    // Name each circle: the files that reach themselves, grouped by who reaches whom.
    let reach = |from: &String| -> BTreeSet<&String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(f) = todo.pop() {
            for &g in left.get(f).into_iter().flatten() {
                if seen.insert(g) {
                    todo.push(g);
                }
            }
        }
        seen
    };
    let mut circles: BTreeSet<Vec<&String>> = BTreeSet::new();
    for &f in left.keys() {
        let from_f = reach(f);
        if from_f.contains(f) {
            let circle: Vec<&String> = from_f
                .iter()
                .copied()
                .filter(|&g| reach(g).contains(f))
                .collect();
            circles.insert(circle);
        }
    }
    let found: BTreeSet<Vec<&str>> = circles
        .iter()
        .map(|c| c.iter().map(|f| f.as_str()).collect())
        .collect();
    assert!(
        found.is_empty(),
        "files that import each other (each group a circle): {found:#?}\n\
         move what the files of a group share into a file of their own, so imports run one way"
    );
}

/// What is left of an import graph once every node that uses nothing left is removed, again and
/// again: the nodes in a circle or using one (empty when there is no circle).
fn in_or_behind_circles<'a>(
    mut left: BTreeMap<&'a String, BTreeSet<&'a String>>,
) -> BTreeMap<&'a String, BTreeSet<&'a String>> {
    loop {
        let done: Vec<&String> = left
            .iter()
            .filter(|(_, used)| used.is_empty())
            .map(|(m, _)| *m)
            .collect();
        if done.is_empty() {
            return left;
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
}
