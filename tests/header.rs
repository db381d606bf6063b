//! Checks on the C header `include/gguf.h`:
//!
//! - it is what build.rs generates from `src/ffi` today (no drift), built with the `header`
//!   feature that alone compiles cbindgen;
//! - it compiles cleanly, alone, as C (C99 to C2x) and C++ (C++11 to C++20), and so does a file
//!   that also declares akunu's C API (the seed's `gguf_parser.h`) and uses it the way akunu
//!   does, which only compiles if every signature and field matches;
//! - it defines no name ggml's own `gguf.h` uses, and `libgguf.so` exports none either (both can
//!   be linked into one process and included into one file); it exports exactly the functions
//!   the header declares;
//! - every function has a doc comment, and every macro expands to names the header defines.

mod common;

use common::{cc, lib_dir, manifest_dir, run};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn committed_header() -> String {
    std::fs::read_to_string(manifest_dir().join("include/gguf.h")).expect("include/gguf.h")
}

// ---------------------------------------------------------------------------------------------
// Drift.

/// The header build.rs generates from `src/ffi` today, and where it was written. Built with the
/// `header` feature, this test finds it in its own `OUT_DIR`; otherwise it runs
/// `cargo check --lib --features header` once in this target directory (cbindgen is compiled on
/// the first run only, and the library is only checked, not built) and reads what that wrote.
fn generated_header() -> (PathBuf, String) {
    #[cfg(feature = "header")]
    let path = PathBuf::from(concat!(env!("OUT_DIR"), "/gguf.h"));
    #[cfg(not(feature = "header"))]
    let path = generate_with_cargo();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("build.rs should have written {}: {e}", path.display()));
    (path, text)
}

#[cfg(not(feature = "header"))]
fn generate_with_cargo() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe
        .ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .expect("the test executable lies in a cargo target directory");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = run(Command::new(cargo)
        .args([
            "check",
            "--lib",
            "--features",
            "header",
            "--message-format=json",
        ])
        .arg("--target-dir")
        .arg(target)
        .current_dir(manifest_dir()));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "build-script-executed")
        .filter(|m| {
            m["package_id"]
                .as_str()
                .is_some_and(|p| p.contains("libgguf"))
        })
        .find_map(|m| m["out_dir"].as_str().map(|d| Path::new(d).join("gguf.h")))
        .expect("cargo check reported no build script run for libgguf")
}

/// The first line where `committed` differs from `generated`: (line number, generated line,
/// committed line).
fn first_difference(generated: &str, committed: &str) -> Option<(usize, String, String)> {
    if generated == committed {
        return None;
    }
    let end = std::iter::repeat("<end of file>");
    let lines = generated.lines().count().max(committed.lines().count());
    let (line, (g, c)) = generated
        .lines()
        .chain(end.clone())
        .zip(committed.lines().chain(end))
        .take(lines)
        .enumerate()
        .find(|(_, (g, c))| g != c)
        // The same lines: they differ in line endings or the final newline.
        .unwrap_or((lines, ("(line endings)", "(line endings)")));
    Some((line + 1, g.to_string(), c.to_string()))
}

#[test]
fn committed_header_is_the_generated_one() {
    let (path, generated) = generated_header();
    assert!(
        generated.contains("gguf_open(") && generated.contains("#define LIBGGUF_VERSION "),
        "{} is not the C header",
        path.display()
    );
    if let Some((line, g, c)) = first_difference(&generated, &committed_header()) {
        panic!(
            "include/gguf.h is out of date: it differs from the header build.rs generates from \
             src/ffi ({}).\nFirst difference, line {line}:\n  generated: {g}\n  \
             committed: {c}\nRun `make header` and commit include/gguf.h.",
            path.display()
        );
    }
}

/// The drift check itself: a header one declaration behind, or cut short, is caught.
#[test]
fn a_stale_header_is_reported() {
    let current = committed_header();
    assert_eq!(first_difference(&current, &current), None);
    let stale = current.replacen("gguf_open(", "gguf_open_old(", 1);
    let (line, g, c) = first_difference(&current, &stale).expect("a renamed function");
    assert!(
        g.contains("gguf_open(") && c.contains("gguf_open_old("),
        "line {line}"
    );
    let cut = &current[..current.len() / 2];
    assert!(first_difference(&current, cut).is_some());
    let crlf = current.replace('\n', "\r\n");
    assert!(first_difference(&current, &crlf).is_some());
}

// ---------------------------------------------------------------------------------------------
// Compiling the header.

const C_FLAGS: &[&str] = &[
    "-Wall",
    "-Wextra",
    "-Werror",
    "-pedantic",
    "-Wstrict-prototypes",
    "-fsyntax-only",
];
const CXX_FLAGS: &[&str] = &["-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only"];
const C_STANDARDS: &[&str] = &["c99", "c11", "c17", "c2x"];
const CXX_STANDARDS: &[&str] = &["c++11", "c++17", "c++20"];

fn scratch_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("header");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compiles `source` (syntax only) as C in every C standard and as C++ in every C++ standard.
fn compiles_everywhere(name: &str, source: &str) {
    let dir = scratch_dir();
    let include = format!("-I{}", manifest_dir().join("include").display());
    // A per-process name, so that concurrent test runs do not race on the file.
    let stem = format!("{name}-{}", std::process::id());
    let c_file = dir.join(format!("{stem}.c"));
    let cxx_file = dir.join(format!("{stem}.cpp"));
    std::fs::write(&c_file, source).unwrap();
    std::fs::write(&cxx_file, source).unwrap();
    let cc = cc();
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    for std in C_STANDARDS {
        run(Command::new(&cc)
            .arg(format!("-std={std}"))
            .args(C_FLAGS)
            .arg(&include)
            .arg(&c_file));
    }
    for std in CXX_STANDARDS {
        run(Command::new(&cxx)
            .arg(format!("-std={std}"))
            .args(CXX_FLAGS)
            .arg(&include)
            .arg(&cxx_file));
    }
    let _ = std::fs::remove_file(c_file);
    let _ = std::fs::remove_file(cxx_file);
}

#[test]
fn header_compiles_alone_as_c_and_cxx() {
    compiles_everywhere("alone", "#include \"gguf.h\"\n");
    compiles_everywhere(
        "twice",
        "#include \"gguf.h\"\n#include \"gguf.h\"\nint gguf_header_included_twice;\n",
    );
}

/// akunu's C API as the seed documents it (its `gguf_parser.h`), and the seed's own usage of it.
/// The prototypes are repeated verbatim: redeclaring a function with another signature, or
/// reading a field that does not exist or has another type, is a compile error, so this compiles
/// only if code written against akunu compiles against libgguf unchanged.
const AKUNU_COMPAT: &str = r#"
#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Lifecycle */
GGUFFile gguf_open(const char *path);
void gguf_close(GGUFFile file);

/* Counts */
uint64_t gguf_tensor_count(GGUFFile file);
uint64_t gguf_metadata_count(GGUFFile file);

/* Tensor lookup */
const GGUFTensorInfo *gguf_get_tensor(GGUFFile file, const char *name);
const GGUFTensorInfo *gguf_get_tensor_by_index(GGUFFile file, uint64_t index);

/* Metadata lookup */
const GGUFMetadataKV *gguf_get_metadata(GGUFFile file, const char *key);
const GGUFMetadataKV *gguf_get_metadata_by_index(GGUFFile file, uint64_t index);

/* Tensor data access */
const void *gguf_tensor_data(GGUFFile file, const GGUFTensorInfo *info);

/* Array helpers */
const char **gguf_get_string_array(GGUFFile file, const char *key,
                                    uint64_t *out_count);
const float *gguf_get_float_array(GGUFFile file, const char *key,
                                   uint64_t *out_count);

#ifdef __cplusplus
}
#endif

/* The typedef names, usable without a struct/union keyword. */
typedef GGUFFile akunu_file_t;
typedef GGUFTensorInfo akunu_tensor_info_t;
typedef GGUFMetadataKV akunu_metadata_kv_t;
typedef GGUFValue akunu_value_t;

/* Every field the seed's code reads, with its type (a pointer to a member of another type does
 * not convert implicitly: an error in C++, and in C under -Werror). */
int akunu_fields(const GGUFTensorInfo *info, const GGUFMetadataKV *kv);
int akunu_fields(const GGUFTensorInfo *info, const GGUFMetadataKV *kv) {
    const char *const *name = &info->name;
    const uint64_t *n_elements = &info->n_elements;
    const uint32_t *n_dims = &info->n_dims;
    const uint64_t (*dims)[4] = &info->dims;
    const uint64_t *offset = &info->offset;
    const uint32_t *dtype = &info->dtype;
    const char *const *key = &kv->key;
    const uint32_t *type = &kv->type;
    const GGUFValue *value = &kv->value;
    const uint32_t *u32 = &kv->value.u32;
    const int32_t *i32 = &kv->value.i32;
    const float *f32 = &kv->value.f32;
    const char *const *str = &kv->value.str;
    const uint64_t *array_len = &kv->array_len;
    const void *const *array_data = &kv->array_data;
    return name != 0 && n_elements != 0 && n_dims != 0 && dims != 0 && offset != 0 &&
           dtype != 0 && key != 0 && type != 0 && value != 0 && u32 != 0 && i32 != 0 &&
           f32 != 0 && str != 0 && array_len != 0 && array_data != 0 && (*dims)[3] == 1;
}

/* The seed's usage (WeightStore::open). */
int akunu_open(const char *path);
int akunu_open(const char *path) {
    GGUFFile gguf_ = gguf_open(path);
    if (!gguf_) return 0;

    /* Read a metadata int */
    const GGUFMetadataKV *kv = gguf_get_metadata(gguf_, "llama.block_count");
    int n_layers = kv->value.u32; /* 32 */

    /* Get a tensor */
    const GGUFTensorInfo *info = gguf_get_tensor(gguf_, "blk.0.attn_q.weight");
    const void *data = gguf_tensor_data(gguf_, info);

    /* Get tokenizer vocabulary */
    uint64_t vocab_size;
    const char **tokens = gguf_get_string_array(gguf_, "tokenizer.ggml.tokens",
                                                 &vocab_size);
    uint64_t n_scores;
    const float *scores = gguf_get_float_array(gguf_, "tokenizer.ggml.scores", &n_scores);

    uint64_t n = gguf_tensor_count(gguf_) + gguf_metadata_count(gguf_);
    const GGUFTensorInfo *first = gguf_get_tensor_by_index(gguf_, 0);
    const GGUFMetadataKV *first_kv = gguf_get_metadata_by_index(gguf_, 0);
    int ok = n_layers > 0 && data != 0 && tokens != 0 && tokens[0] != 0 && scores != 0 &&
             vocab_size == n_scores && n > 0 && first != 0 && first->n_dims <= 4 &&
             first_kv != 0 && first_kv->type == GGUF_VALUE_TYPE_ARRAY &&
             first_kv->value.u32 == GGUF_VALUE_TYPE_STRING && first_kv->array_len > 0 &&
             first_kv->array_data != 0 && info->dtype == GGUF_DATA_TYPE_Q4_0 &&
             info->n_elements == info->dims[0] * info->dims[1] && info->offset == 0 &&
             info->name[0] == 'b';
    gguf_close(gguf_);
    return ok;
}
"#;

#[test]
fn akunu_declarations_and_usage_compile_against_the_header() {
    compiles_everywhere("akunu_compat", AKUNU_COMPAT);
}

// ---------------------------------------------------------------------------------------------
// Reading the header: identifiers by kind, without a C parser (the generated header is regular).

/// The header with every comment replaced by spaces (newlines kept, so lines still match).
fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '/' && chars.peek() == Some(&'*') {
            chars.next();
            let mut prev = ' ';
            for c in chars.by_ref() {
                out.push(if c == '\n' { '\n' } else { ' ' });
                if prev == '*' && c == '/' {
                    break;
                }
                prev = c;
            }
            out.push_str("  ");
        } else if c == '/' && chars.peek() == Some(&'/') {
            for c in chars.by_ref() {
                if c == '\n' {
                    out.push('\n');
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Punct(char),
}

fn tokens(code: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = code.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_alphabetic() || c == '_' {
            let mut ident = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_ascii_alphanumeric() || c == '_' {
                    ident.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(Token::Ident(ident));
        } else if c.is_ascii_digit() {
            while chars.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
                chars.next();
            }
        } else if c == '"' || c == '\'' {
            // A string or character literal: no identifiers inside.
            chars.next();
            while let Some(d) = chars.next() {
                if d == '\\' {
                    chars.next();
                } else if d == c {
                    break;
                }
            }
        } else {
            if !c.is_whitespace() {
                out.push(Token::Punct(c));
            }
            chars.next();
        }
    }
    out
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token::Ident(s)) => Some(s),
        _ => None,
    }
}

/// What the header defines, by kind, and every identifier it mentions outside comments.
struct HeaderNames {
    functions: BTreeSet<String>,
    macros: BTreeMap<String, Vec<String>>,
    enum_constants: BTreeSet<String>,
    typedefs: BTreeSet<String>,
    tags: BTreeSet<String>,
    members: BTreeSet<String>,
    all: BTreeSet<String>,
}

impl HeaderNames {
    fn parse(header: &str) -> HeaderNames {
        let code = strip_comments(header);
        let mut names = HeaderNames {
            functions: BTreeSet::new(),
            macros: BTreeMap::new(),
            enum_constants: BTreeSet::new(),
            typedefs: BTreeSet::new(),
            tags: BTreeSet::new(),
            members: BTreeSet::new(),
            all: BTreeSet::new(),
        };
        // Preprocessor lines: macros; the rest is declarations.
        let mut decls = String::new();
        for line in code.lines() {
            let trimmed = line.trim_start();
            if let Some(directive) = trimmed.strip_prefix('#') {
                let toks = tokens(directive);
                if ident(toks.first()) == Some("define") {
                    let name = ident(toks.get(1)).expect("#define NAME").to_string();
                    let body = toks[2..]
                        .iter()
                        .filter_map(|t| ident(Some(t)).map(str::to_string))
                        .collect();
                    names.macros.insert(name, body);
                }
                names
                    .all
                    .extend(toks.iter().filter_map(|t| ident(Some(t)).map(String::from)));
            } else {
                decls.push_str(line);
                decls.push('\n');
            }
        }
        let toks = tokens(&decls);
        names
            .all
            .extend(toks.iter().filter_map(|t| ident(Some(t)).map(String::from)));

        // Declarations: walk with a stack of what each open brace opened. `extern "C" { }` is
        // a transparent block: what it holds is at file scope.
        let mut stack: Vec<&str> = Vec::new(); // "enum", "record" or "block"
        let mut statement_start = 0;
        for (i, tok) in toks.iter().enumerate() {
            let file_scope = stack.iter().all(|s| *s == "block");
            match tok {
                Token::Ident(word) if matches!(word.as_str(), "struct" | "union" | "enum") => {
                    if let Some(tag) = ident(toks.get(i + 1)) {
                        names.tags.insert(tag.to_string());
                    }
                }
                Token::Ident(name) => {
                    let prev = i.checked_sub(1).and_then(|p| toks.get(p));
                    let next = toks.get(i + 1);
                    match stack.last() {
                        Some(&"enum") if matches!(prev, Some(Token::Punct('{' | ','))) => {
                            names.enum_constants.insert(name.clone());
                        }
                        Some(&"record") if matches!(next, Some(Token::Punct(';' | '['))) => {
                            names.members.insert(name.clone());
                        }
                        // Not the return type of a function pointer type
                        // (`typedef int64_t (*GGUFReadFn)(...)`).
                        _ if file_scope
                            && next == Some(&Token::Punct('('))
                            && ident(toks.get(statement_start)) != Some("typedef") =>
                        {
                            names.functions.insert(name.clone());
                        }
                        _ => {}
                    }
                }
                Token::Punct('{') => {
                    let opener = toks[statement_start..i]
                        .iter()
                        .rev()
                        .find_map(|t| match ident(Some(t)) {
                            Some("enum") => Some("enum"),
                            Some("struct" | "union") => Some("record"),
                            _ => None,
                        })
                        .unwrap_or("block");
                    stack.push(opener);
                    if opener == "block" {
                        statement_start = i + 1;
                    }
                }
                Token::Punct('}') => {
                    if stack.pop() == Some("block") {
                        statement_start = i + 1;
                    }
                }
                Token::Punct(';') if file_scope => {
                    let statement = &toks[statement_start..i];
                    if ident(statement.first()) == Some("typedef") {
                        // `typedef T NAME;`, or a function pointer: `typedef T (*NAME)(...);`.
                        let name = ident(statement.last()).or_else(|| {
                            statement.windows(3).find_map(|w| match (&w[0], &w[1]) {
                                (Token::Punct('('), Token::Punct('*')) => ident(w.get(2)),
                                _ => None,
                            })
                        });
                        if let Some(name) = name {
                            names.typedefs.insert(name.to_string());
                        }
                    }
                    statement_start = i + 1;
                }
                Token::Punct(_) => {}
            }
        }
        names
    }

    /// Every identifier the header defines at file scope, with its kind.
    fn defined(&self) -> Vec<(&'static str, &String)> {
        let mut out = Vec::new();
        out.extend(self.functions.iter().map(|n| ("function", n)));
        out.extend(self.macros.keys().map(|n| ("macro", n)));
        out.extend(self.enum_constants.iter().map(|n| ("enum constant", n)));
        out.extend(self.typedefs.iter().map(|n| ("typedef", n)));
        out.extend(self.tags.iter().map(|n| ("struct/union/enum tag", n)));
        out
    }
}

fn header_names() -> &'static HeaderNames {
    static NAMES: OnceLock<HeaderNames> = OnceLock::new();
    NAMES.get_or_init(|| {
        let names = HeaderNames::parse(&committed_header());
        // The parse must have found what is certainly there, or the checks below prove nothing.
        for f in [
            "gguf_open",
            "gguf_close",
            "gguf_get_metadata",
            "gguf_value_type_name",
        ] {
            assert!(names.functions.contains(f), "parser missed function {f}");
        }
        assert!(names.macros.contains_key("LIBGGUF_GGUF_H"));
        for c in [
            "GGUF_VALUE_TYPE_UINT8",
            "GGUF_DATA_TYPE_Q4_K",
            "GGUF_ERROR_CODE_DATA_OVERLAP",
            "GGUF_BYTE_ORDER_BIG",
        ] {
            assert!(names.enum_constants.contains(c), "parser missed {c}");
        }
        for t in [
            "GGUFFile",
            "GGUFFileImpl",
            "GGUFValue",
            "GGUFMetadataKV",
            "GGUFTensorInfo",
            "GGUFValueType",
        ] {
            assert!(names.typedefs.contains(t), "parser missed typedef {t}");
        }
        for t in ["GGUFFileImpl", "GGUFTensorInfo", "GGUFErrorCode"] {
            assert!(names.tags.contains(t), "parser missed tag {t}");
        }
        for m in ["n_elements", "dims", "array_data", "u32", "str"] {
            assert!(names.members.contains(m), "parser missed member {m}");
        }
        assert!(!names.functions.contains("defined"));
        assert!(!names.enum_constants.contains("uint32_t"));
        names
    })
}

// ---------------------------------------------------------------------------------------------
// ggml's names.

/// The names of tests/data/ggml-gguf-names.txt, with their section.
fn ggml_names() -> BTreeMap<String, String> {
    let path = manifest_dir().join("tests/data/ggml-gguf-names.txt");
    let text = std::fs::read_to_string(&path).expect("tests/data/ggml-gguf-names.txt");
    let mut section = String::new();
    let mut names = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        // "struct gguf_context" names `gguf_context`.
        let name = line.split_whitespace().last().unwrap().to_string();
        names.insert(name, section.clone());
    }
    for section in ["exported functions", "macros", "types", "enum constants"] {
        assert!(
            names.values().any(|s| s == section),
            "{} has no [{section}] section",
            path.display()
        );
    }
    assert!(names.contains_key("gguf_init_from_file") && names.contains_key("gguf_context"));
    names
}

#[test]
fn header_defines_no_ggml_name() {
    let ggml = ggml_names();
    let header = header_names();
    let mut clashes = Vec::new();
    let mut reported = BTreeSet::new();
    for (kind, name) in header.defined() {
        if let Some(section) = ggml.get(name) {
            clashes.push(format!("{kind} {name} (ggml: {section})"));
            reported.insert(name);
        }
    }
    // Anything else the header mentions (members, parameters, names in macros) too.
    for name in header.all.iter().filter(|n| !reported.contains(n)) {
        if let Some(section) = ggml.get(name) {
            clashes.push(format!("identifier {name} (ggml: {section})"));
        }
    }
    assert!(
        clashes.is_empty(),
        "include/gguf.h uses names of ggml's gguf.h, so the two headers cannot be included \
         together:\n  {}",
        clashes.join("\n  ")
    );
}

/// This profile's `libgguf.so`, freshly built (`cargo test` builds only the rlib, and would
/// leave a stale one).
fn built_shared_library() -> PathBuf {
    lib_dir().join("libgguf.so")
}

fn exported_symbols(so: &Path) -> BTreeSet<String> {
    let out = run(Command::new("nm").args(["-D", "--defined-only"]).arg(so));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(|s| s.split('@').next().unwrap().to_string())
        .collect()
}

#[test]
fn shared_library_exports_no_ggml_name_and_exactly_the_header_functions() {
    let so = built_shared_library();
    let exported = exported_symbols(&so);
    let ggml = ggml_names();
    let clashes: Vec<String> = exported
        .iter()
        .filter_map(|s| ggml.get(s).map(|section| format!("{s} (ggml: {section})")))
        .collect();
    assert!(
        clashes.is_empty(),
        "{} exports symbols ggml's libggml-base.so exports too, so the two cannot be linked \
         into one process:\n  {}",
        so.display(),
        clashes.join("\n  ")
    );

    let declared = &header_names().functions;
    let undeclared: Vec<&String> = exported
        .iter()
        .filter(|s| s.starts_with("gguf_") && !declared.contains(*s))
        .collect();
    let missing: Vec<&String> = declared.iter().filter(|f| !exported.contains(*f)).collect();
    assert!(
        undeclared.is_empty() && missing.is_empty(),
        "exported but not in include/gguf.h: {undeclared:?}; declared but not exported by {}: \
         {missing:?}",
        so.display()
    );
}

// ---------------------------------------------------------------------------------------------
// Documentation and macros.

#[test]
fn every_function_has_a_doc_comment_directly_above_it() {
    let header = committed_header();
    let code = strip_comments(&header);
    let lines: Vec<&str> = header.lines().collect();
    let code_lines: Vec<&str> = code.lines().collect();
    let functions = &header_names().functions;
    let mut undocumented = Vec::new();
    for name in functions {
        let pattern = format!("{name}(");
        let at = code_lines
            .iter()
            .position(|l| {
                !l.trim_start().starts_with('#')
                    && l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '('))
                        .any(|w| w.starts_with(&pattern))
            })
            .unwrap_or_else(|| panic!("declaration of {name} not found"));
        // The line above must close a `/** ... */` comment with some text in it.
        let mut doc = String::new();
        let mut ok = false;
        if at > 0 && lines[at - 1].trim_end().ends_with("*/") {
            for l in lines[..at].iter().rev() {
                doc.insert_str(0, l);
                if l.trim_start().starts_with("/**") {
                    ok = true;
                    break;
                }
                if !l.trim_start().starts_with('*') {
                    break;
                }
            }
        }
        let text: String = doc
            .replace("/**", "")
            .replace("*/", "")
            .replace('*', "")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if !ok || text.is_empty() {
            undocumented.push(format!("{name} (line {})", at + 1));
        }
    }
    // The parse found the declarations (akunu's twelve at least), not a stray subset.
    assert!(
        functions.len() >= 12 && functions.contains("gguf_tensor_data"),
        "functions found: {functions:?}"
    );
    assert!(
        undocumented.is_empty(),
        "functions in include/gguf.h without a doc comment directly above: {undocumented:?}"
    );
}

/// A macro that expands to names the header does not define cannot be used by any includer.
#[test]
fn every_macro_expands_to_defined_names() {
    let names = header_names();
    let defined: BTreeSet<&String> = names.defined().into_iter().map(|(_, n)| n).collect();
    let mut broken = Vec::new();
    for (name, body) in &names.macros {
        for word in body {
            if !defined.contains(word) {
                broken.push(format!("{name} uses {word}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "macros of include/gguf.h that expand to undefined names: {broken:?}"
    );
}
