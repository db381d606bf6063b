//! The examples of the documents, taken from them as they are: README.md, every `docs/*.md` and
//! `python/README.md`.
//!
//! - The README's C example ("Using it from C") compiles with `-Wall -Wextra -Werror -pedantic`
//!   (C99) and prints the right things for a Llama model (the bundled sample) and for a model of
//!   another architecture (a Gemma 3 file written here), whose keys are named after it
//!   (`gemma3.block_count`).
//! - Every other ```c block is a whole program, compiled with `-Wall -Wextra -Werror` and run in a
//!   directory of its own where `model.gguf` is the bundled sample; it must exit 0 and print
//!   nothing on stderr, and every GGUF file it leaves there must open. The GPU examples are
//!   functions (Metal and CUDA are not here): each is linked with a driver below that stands in
//!   for the driver API and checks what the function did with every tensor of the sample.
//!   A ```c block marked `excerpt` quotes `include/gguf.h`: the types it names must be there.
//! - Each document's ```python blocks run one after the other in one interpreter, in such a
//!   directory, against this profile's library.
//! - The ```rust blocks are doctests of the crate: each document holding one is included in
//!   `src/lib.rs`.
//! - Every document of `docs/` is linked from the README, and every relative link of the
//!   documents names a file that exists.

mod common;

use common::{bin_dir, cc, lib_dir, link_aside, manifest_dir, show};
use gguf::{DataType, MappedFile, MetadataValue as V, Value, ValueType, Writer};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The first ```c block of the README's section "Using it from C".
fn c_example() -> String {
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let section = readme
        .split_once("\n## Using it from C\n")
        .expect("README.md has a section \"Using it from C\"")
        .1;
    let section = section.split("\n## ").next().unwrap();
    let code = section
        .split_once("```c\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .expect("the section has a ```c block")
        .0;
    assert!(code.contains("int main("), "not a whole program:\n{code}");
    code.to_string()
}

/// The example, compiled once per test process against this profile's `libgguf.so`.
fn example_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = bin_dir("readme");
        let src = dir.join(format!("readme-example-{}.c", std::process::id()));
        std::fs::write(&src, c_example()).unwrap();
        let exe = dir.join("readme-example");
        let lib = lib_dir();
        let mut cmd = Command::new(cc());
        cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
            .arg(format!("-I{}", manifest_dir().join("include").display()))
            .arg(&src)
            .arg(format!("-L{}", lib.display()))
            .arg("-lgguf")
            .arg(format!("-Wl,-rpath,{}", lib.display()));
        link_aside(&mut cmd, &exe);
        let _ = std::fs::remove_file(src);
        exe
    })
}

fn run_example(model: &Path) -> Output {
    Command::new(example_exe())
        .arg(model)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the README example: {e}"))
}

/// What the example must print for `model`, from the Rust reader.
fn expected_output(model: &Path) -> String {
    let f = MappedFile::open(model).unwrap();
    let mut out = String::new();
    if let Some(Value::String(arch)) = f.get("general.architecture") {
        let arch = String::from_utf8(arch.to_vec()).unwrap();
        out += &format!("architecture: {arch}\n");
        if let Some(Value::U32(n)) = f.get(format!("{arch}.block_count")) {
            out += &format!("layers: {n}\n");
        }
    }
    if let Some(tokens) = f.get("tokenizer.ggml.tokens").and_then(|v| v.as_array()) {
        let first = tokens.strings().unwrap().next().unwrap();
        out += &format!(
            "vocab: {}, first token {}\n",
            tokens.len(),
            String::from_utf8(first.to_vec()).unwrap()
        );
    }
    if let Some(t) = f.tensor("token_embd.weight") {
        out += &format!(
            "token_embd.weight: {}, {} bytes at file offset {} (mapped)\n",
            t.dtype.name(),
            t.size,
            t.file_offset
        );
    }
    out
}

fn check(model: &Path, must_contain: &[&str]) {
    let out = run_example(model);
    assert!(out.status.success(), "{}", show(&out));
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(stdout, expected_output(model), "{}", model.display());
    for line in must_contain {
        assert!(
            stdout.lines().any(|l| l == *line),
            "the README example did not print {line:?} for {}:\n{}",
            model.display(),
            show(&out)
        );
    }
}

#[test]
fn the_c_example_runs_on_the_llama_sample() {
    let sample = manifest_dir().join("testdata/sample.gguf");
    let f = MappedFile::open(&sample).unwrap();
    let layers = f.get("llama.block_count").and_then(|v| v.as_u64()).unwrap();
    check(
        &sample,
        &["architecture: llama", &format!("layers: {layers}")],
    );
}

#[test]
fn the_c_example_runs_on_a_gemma3_model() {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("readme-gemma3-{}.gguf", std::process::id()));
    let mut w = Writer::new();
    w.add_metadata("general.architecture", V::string("gemma3"))
        .unwrap();
    w.add_metadata("gemma3.block_count", V::U32(26)).unwrap();
    w.add_metadata("gemma3.context_length", V::U32(32768))
        .unwrap();
    let tokens = ["<pad>", "<eos>", "<bos>", "hello"];
    w.add_metadata(
        "tokenizer.ggml.tokens",
        V::Array(ValueType::String, tokens.iter().map(V::string).collect()),
    )
    .unwrap();
    w.add_tensor("token_embd.weight", &[8, 4], DataType::F32, vec![0; 128])
        .unwrap();
    w.write_file(&path).unwrap();
    check(
        &path,
        &[
            "architecture: gemma3",
            "layers: 26",
            "vocab: 4, first token <pad>",
        ],
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn the_c_example_reports_why_a_file_does_not_open() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme-no-such-model.gguf");
    let out = run_example(&missing);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(out.stdout.is_empty(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("readme-no-such-model.gguf"),
        "the error does not name the file: {stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// Every example of every document.

/// A fenced code block: where it is, its info string (`c`, `python`, `c excerpt`, ...) and text.
struct Block {
    file: String,
    line: usize,
    info: String,
    code: String,
}

impl Block {
    fn lang(&self) -> &str {
        self.info.split_whitespace().next().unwrap_or("")
    }
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// README.md, then docs/*.md in name order (paths relative to the repository).
fn documents() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(manifest_dir().join("docs"))
        .expect("the docs/ directory")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 8, "docs/ has only {docs:?}");
    let mut all = vec!["README.md".to_string()];
    all.extend(docs);
    all
}

fn code_blocks(file: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(manifest_dir().join(file)).unwrap();
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    file: file.to_string(),
                    line: i + 1,
                    info: info.trim().to_string(),
                    code: String::new(),
                })
            }
            (Some(_), Some("")) => blocks.push(open.take().unwrap()),
            (Some(b), _) => {
                b.code.push_str(line);
                b.code.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{file}: a code block is not closed");
    blocks
}

fn all_blocks() -> Vec<Block> {
    documents().iter().flat_map(|d| code_blocks(d)).collect()
}

/// A fresh directory holding the bundled sample as `model.gguf`.
fn example_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("readme")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        manifest_dir().join("testdata/sample.gguf"),
        dir.join("model.gguf"),
    )
    .unwrap();
    dir
}

/// Stand-ins for the CUDA runtime calls of the CUDA example: host memory for device memory,
/// `memcpy` for copies; registrations are counted and checked.
const CUDA_STUB: &str = r#"
#include <stddef.h>
#include <string.h>
typedef int cudaError_t;
typedef struct CUstream_st *cudaStream_t;
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1 };
#define cudaSuccess 0
#define cudaHostRegisterReadOnly 8
int registered;
static inline cudaError_t cudaHostRegister(void *p, size_t n, unsigned flags) {
    (void)p; (void)n; registered++; return flags == cudaHostRegisterReadOnly ? 0 : 1;
}
static inline cudaError_t cudaHostUnregister(void *p) { (void)p; registered--; return 0; }
static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k,
                                          cudaStream_t st) {
    (void)k; (void)st; memcpy(d, s, n); return 0;
}
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) {
    (void)k; memcpy(d, s, n); return 0;
}
static inline cudaError_t cudaStreamSynchronize(cudaStream_t st) { (void)st; return 0; }
"#;

/// The `main` that drives an example written as a function, by the function's name.
fn driver(block: &Block) -> &'static str {
    const METAL: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int wrapped;
void *metal_wrap(void *device, const void *data, uint64_t size) {
    long page = sysconf(_SC_PAGESIZE);
    if (device != (void *)&wrapped || (uintptr_t)data % page || size % page) return NULL;
    wrapped++;
    return (void *)data;  /* the buffer is the memory itself here */
}
int main(void) {
    GGUFFile f = gguf_open("model.gguf");
    if (!f) return 1;
    uint64_t n = gguf_tensor_count(f);
    void *buffers[64];
    MetalTensor *tensors = calloc(n, sizeof *tensors);
    if (metal_upload(f, &wrapped, 1 << 20, buffers, 64, tensors) != 0 || wrapped == 0) return 2;
    for (uint64_t i = 0; i < n; i++)
        if ((const char *)tensors[i].buffer + tensors[i].offset
            != gguf_tensor_data(f, gguf_get_tensor_by_index(f, i))) return 3;
    free(tensors);
    gguf_close(f);
    return 0;
}
"#;
    const CUDA: &str = r#"
#include <stdlib.h>
int main(void) {
    GGUFFile f = gguf_open("model.gguf");
    if (!f) return 1;
    uint64_t n = gguf_tensor_count(f);
    void **dev = calloc(n, sizeof *dev);
    for (uint64_t i = 0; i < n; i++) dev[i] = malloc(gguf_get_tensor_by_index(f, i)->size_bytes + 1);
    if (cuda_upload(f, dev, NULL) != 0 || registered != 0) return 2;
    for (uint64_t i = 0; i < n; i++) {
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, i);
        if (memcmp(dev[i], gguf_tensor_data(f, t), t->size_bytes) != 0) return 3;
        free(dev[i]);
    }
    free(dev);
    gguf_close(f);
    return 0;
}
"#;
    const DIRECT: &str = r#"
#include <string.h>
static GGUFFile file;
static uint64_t seen[1024];
static void use(const GGUFTensorInfo *t, const void *bytes) {
    if (t->index < 1024 && memcmp(bytes, gguf_tensor_data(file, t), t->size_bytes) == 0)
        seen[t->index]++;
}
int main(void) {
    file = gguf_open("model.gguf");
    if (!file || gguf_tensor_count(file) > 1024) return 1;
    if (read_direct(file, use) != 0) return 2;
    for (uint64_t i = 0; i < gguf_tensor_count(file); i++)
        if (seen[i] != 1) return 3;
    gguf_close(file);
    return 0;
}
"#;
    if block.code.contains("int metal_upload(") {
        METAL
    } else if block.code.contains("int cuda_upload(") {
        CUDA
    } else if block.code.contains("int read_direct(") {
        DIRECT
    } else {
        panic!(
            "{}: a ```c block is neither a whole program nor a function this test drives",
            block.at()
        )
    }
}

/// Compiles a ```c block (with its driver when it is a function) and runs it in a directory
/// holding the sample as `model.gguf`; returns that directory.
fn run_c_block(block: &Block, n: usize) -> PathBuf {
    let dir = example_dir(&format!("c{n}"));
    let mut src = block.code.clone();
    if !src.contains("int main(") {
        src.push_str(driver(block));
    }
    std::fs::write(dir.join("example.c"), &src).unwrap();
    std::fs::write(dir.join("cuda_runtime.h"), CUDA_STUB).unwrap();
    let lib = lib_dir();
    let exe = dir.join("example");
    let mut cmd = Command::new(cc());
    cmd.args(["-std=gnu11", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{}", manifest_dir().join("include").display()))
        .arg(format!("-I{}", dir.display()))
        .arg(dir.join("example.c"))
        .arg(format!("-L{}", lib.display()))
        .arg("-lgguf")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&exe);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}: the example does not compile:\n{}",
        block.at(),
        show(&out)
    );
    // The URL example reads the sample from a server of this test's own.
    let arg = if block.code.contains("gguf_open_url") {
        serve_sample()
    } else {
        "model.gguf".to_string()
    };
    let out = Command::new(&exe)
        .arg(arg)
        .current_dir(&dir)
        .env("NO_PROXY", "127.0.0.1")
        .env_remove("HF_TOKEN")
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}: the example failed on the sample:\n{}",
        block.at(),
        show(&out)
    );
    // Every GGUF file it wrote opens.
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "gguf") {
            MappedFile::open(&path).unwrap_or_else(|e| {
                panic!("{}: it wrote a file that does not open: {e}", block.at())
            });
        }
    }
    dir
}

/// Serves the sample over HTTP/1.1 on the loopback (HEAD, and GET of one byte range, as
/// `gguf_open_url` asks), each connection on a thread, for the rest of the process; its URL.
fn serve_sample() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let bytes: &'static [u8] = std::fs::read(manifest_dir().join("testdata/sample.gguf"))
            .unwrap()
            .leak();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                std::thread::spawn(move || answer(conn, bytes));
            }
        });
        format!("http://127.0.0.1:{port}/model.gguf")
    })
    .clone()
}

fn answer(conn: std::net::TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::{BufRead, Write};
    let mut reader = std::io::BufReader::new(conn.try_clone()?);
    let mut conn = conn;
    loop {
        let mut request = String::new();
        if reader.read_line(&mut request)? == 0 {
            return Ok(());
        }
        let mut range = None;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            let line = line.trim_end().to_ascii_lowercase();
            if line.is_empty() {
                break;
            }
            if let Some((a, b)) = line
                .strip_prefix("range: bytes=")
                .and_then(|r| r.split_once('-'))
            {
                let len = bytes.len() as u64;
                let start: u64 = a.parse().unwrap();
                let end = b.parse::<u64>().map_or(len - 1, |e| e.min(len - 1));
                range = Some((start, end));
            }
        }
        let len = bytes.len();
        let head = request.starts_with("HEAD ");
        let (status, body, extra) = match range {
            Some((start, end)) if start < len as u64 && start <= end => (
                "206 Partial Content",
                &bytes[start as usize..=end as usize],
                format!("Content-Range: bytes {start}-{end}/{len}\r\n"),
            ),
            Some(_) => (
                "416 Range Not Satisfiable",
                &bytes[..0],
                format!("Content-Range: bytes */{len}\r\n"),
            ),
            None => ("200 OK", bytes, String::new()),
        };
        write!(
            conn,
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nAccept-Ranges: bytes\r\n{extra}\r\n",
            body.len()
        )?;
        if !head {
            conn.write_all(body)?;
        }
    }
}

#[test]
fn every_c_example_runs_on_the_sample() {
    let blocks: Vec<Block> = all_blocks()
        .into_iter()
        .filter(|b| b.lang() == "c")
        .collect();
    let mut ran = 0;
    for (n, block) in blocks.iter().enumerate() {
        if block.info.split_whitespace().any(|w| w == "excerpt") {
            let header = std::fs::read_to_string(manifest_dir().join("include/gguf.h")).unwrap();
            for line in block.code.lines() {
                if let Some(name) = line
                    .split_once("} ")
                    .and_then(|(_, r)| r.split(';').next())
                    .filter(|n| n.starts_with("GGUF"))
                {
                    assert!(
                        header.contains(&format!("}} {name};")),
                        "{}: gguf.h has no type {name}",
                        block.at()
                    );
                }
            }
            continue;
        }
        let dir = run_c_block(block, n);
        ran += 1;
        // What the editor and the streaming writer must have written.
        if block.code.contains("\"edited.gguf\"") {
            let edited = MappedFile::open(dir.join("edited.gguf")).unwrap();
            let src = MappedFile::open(dir.join("model.gguf")).unwrap();
            assert_eq!(edited.get("general.name"), Some(Value::String(b"my model")));
            assert_eq!(
                edited.get("general.license"),
                Some(Value::String(b"apache-2.0"))
            );
            assert!(edited.get("general.url").is_none());
            assert_eq!(edited.tensors().count(), src.tensors().count());
            for t in src.tensors() {
                assert_eq!(
                    edited.tensor(t.name).unwrap().data,
                    t.data,
                    "{}",
                    block.at()
                );
            }
        }
        if block.code.contains("\"streamed.gguf\"") {
            let f = MappedFile::open(dir.join("streamed.gguf")).unwrap();
            assert_eq!(f.tensors().count(), 4, "{}", block.at());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(ran >= 13, "only {ran} C examples found");
}

#[test]
fn every_python_example_runs_on_the_sample() {
    let lib = lib_dir().join(if cfg!(target_os = "macos") {
        "libgguf.dylib"
    } else {
        "libgguf.so"
    });
    let mut docs = documents();
    docs.push("python/README.md".into());
    let mut ran = 0;
    for (n, doc) in docs.iter().enumerate() {
        let blocks: Vec<Block> = code_blocks(doc)
            .into_iter()
            .filter(|b| b.lang() == "python")
            .collect();
        if blocks.is_empty() {
            continue;
        }
        // One script per document: its blocks follow on from each other.
        let script: String = blocks
            .iter()
            .map(|b| format!("# {}\n{}", b.at(), b.code))
            .collect();
        let dir = example_dir(&format!("py{n}"));
        std::fs::write(dir.join("example.py"), &script).unwrap();
        let out = Command::new(common::reference_python())
            .arg("example.py")
            .current_dir(&dir)
            .env("LIBGGUF_PATH", &lib)
            .env("PYTHONPATH", manifest_dir().join("python"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{doc}: the Python examples failed on the sample:\n{}",
            show(&out)
        );
        ran += blocks.len();
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(ran >= 5, "only {ran} Python examples found");
}

#[test]
fn every_rust_example_is_a_doctest() {
    let lib_rs = std::fs::read_to_string(manifest_dir().join("src/lib.rs")).unwrap();
    for doc in documents() {
        if code_blocks(&doc).iter().any(|b| b.lang() == "rust") {
            let included = format!("include_str!(\"../{doc}\")");
            assert!(
                lib_rs.contains(&included),
                "src/lib.rs does not hold {included}"
            );
        }
    }
}

#[test]
fn the_documents_are_linked_and_their_links_resolve() {
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let mut docs = documents();
    for doc in &docs[1..] {
        assert!(
            readme.contains(&format!("]({doc})")),
            "README.md does not link {doc}"
        );
    }
    docs.extend(["BENCHMARKS.md".into(), "python/README.md".into()]);
    for doc in &docs {
        let text = std::fs::read_to_string(manifest_dir().join(doc)).unwrap();
        let base = Path::new(doc).parent().unwrap();
        for (_, rest) in text.match_indices("](").map(|(i, _)| text.split_at(i + 2)) {
            let target = rest.split([')', '#']).next().unwrap();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            assert!(
                manifest_dir().join(base).join(target).exists(),
                "{doc}: the link to {target} leads nowhere"
            );
        }
    }
}

#[test]
fn the_licenses_and_what_the_doctests_read_are_packaged() {
    for name in ["LICENSE-MIT", "LICENSE-APACHE"] {
        let text = std::fs::read(manifest_dir().join(name)).unwrap();
        assert_eq!(
            std::fs::read(manifest_dir().join("python").join(name)).unwrap(),
            text,
            "python/{name} differs from {name}"
        );
    }
    let manifest = std::fs::read_to_string(manifest_dir().join("Cargo.toml")).unwrap();
    // The crate's package lists what it holds (`include`): the licenses, and what the crate's
    // doctests and unit tests read, are in it.
    for file in [
        "/LICENSE-MIT",
        "/LICENSE-APACHE",
        "/README.md",
        "/docs/*.md",
        "/testdata/sample.gguf",
        "/tests/data/ggml-types.tsv",
    ] {
        assert!(
            manifest.contains(&format!("\"{file}\"")),
            "Cargo.toml's include does not name {file}"
        );
    }
    let pyproject = std::fs::read_to_string(manifest_dir().join("python/pyproject.toml")).unwrap();
    assert!(
        pyproject.contains("license-files = [\"LICENSE-MIT\", \"LICENSE-APACHE\"]"),
        "python/pyproject.toml does not name both licenses"
    );
}

/// The README's dependency lines work as written: a crate beside a checkout named `libgguf`
/// resolves `gguf` from it (offline, from the packages cargo already has), with the network
/// client by default and without it when `default-features = false`. (Unix: the checkout is
/// linked in by a symbolic link.)
#[cfg(unix)]
#[test]
fn the_rust_dependency_lines_resolve() {
    let block = code_blocks("README.md")
        .into_iter()
        .find(|b| b.lang() == "toml")
        .expect("README.md has a ```toml block");
    let lines: Vec<&str> = block.code.lines().collect();
    assert_eq!(lines[0], "[dependencies]");
    let default = lines[1];
    let lean = lines
        .iter()
        .find_map(|l| {
            l.strip_prefix("# ")
                .filter(|l| l.contains("default-features = false"))
        })
        .expect("a line with default-features = false");
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("readme")
        .join(format!("dependency-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("app/src")).unwrap();
    std::os::unix::fs::symlink(manifest_dir(), root.join("libgguf")).unwrap();
    std::fs::write(root.join("app/src/main.rs"), "fn main() {}\n").unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for (line, networked) in [(default, true), (lean, false)] {
        std::fs::write(
            root.join("app/Cargo.toml"),
            format!(
                "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [workspace]\n\n[dependencies]\n{line}\n"
            ),
        )
        .unwrap();
        let _ = std::fs::remove_file(root.join("app/Cargo.lock"));
        let out = Command::new(&cargo)
            .args(["metadata", "--offline", "--format-version", "1"])
            .current_dir(root.join("app"))
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}\n{}", show(&out));
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let names: Vec<&str> = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"libgguf"), "{line}: {names:?}");
        for net in ["ureq", "rustls", "ring"] {
            assert_eq!(
                names.contains(&net),
                networked,
                "{line}: {net} in {names:?}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}
