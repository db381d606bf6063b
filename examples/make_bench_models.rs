//! Writes the benchmark models (see `bench/models.rs`) into DIR and prints each file's size and
//! header size. Deterministic: the same files every run.
//!
//! cargo run --release --example make_bench_models DIR [--if-missing]

#[path = "../bench/models.rs"]
mod models;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: make_bench_models DIR [--if-missing]");
        std::process::exit(2);
    };
    let only_missing = args.next().is_some_and(|a| a == "--if-missing");
    let made = match models::generate(std::path::Path::new(&dir), only_missing) {
        Ok(made) => made,
        Err(e) => {
            eprintln!("make_bench_models: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "{:<24} {:>17} {:>13} {:>5} {:>7} {:>7} {:>11} {:>16}",
        "file", "size", "header", "keys", "tensors", "tokens", "mean token", "max data offset"
    );
    for m in &made {
        println!(
            "{:<24} {:>17} {:>13} {:>5} {:>7} {:>7} {:>9.2} B {:>16}",
            m.name,
            human(m.file_size),
            human(m.header_size),
            m.keys,
            m.tensors,
            m.tokens,
            m.mean_token_bytes,
            m.max_file_offset
        );
    }
}

/// Bytes, with a binary-unit reading when large.
fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    if unit == "B" {
        format!("{n} B")
    } else {
        format!("{n} ({v:.2} {unit})")
    }
}
