//! Writes the benchmark models (see `bench/models.rs`) into DIR and prints each file's size and
//! header size. Deterministic: the same files every run.
//!
//! cargo run --release --example make_bench_models DIR [--if-missing] [--only NAME,...]
//!
//! `--only` writes just the named models (file names, as `bench/models.rs` lists them).

#[allow(dead_code)]
#[path = "../bench/models.rs"]
mod models;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let usage = || -> ! {
        eprintln!("usage: make_bench_models DIR [--if-missing] [--only NAME,...]");
        std::process::exit(2);
    };
    let Some(dir) = args.next() else { usage() };
    let (mut only_missing, mut names) = (false, models::ALL.to_vec());
    while let Some(arg) = args.next() {
        if arg == "--if-missing" {
            only_missing = true;
        } else if arg == "--only" {
            let list = args.next().unwrap_or_else(|| usage());
            let list = list.to_string_lossy();
            names = models::ALL
                .iter()
                .copied()
                .filter(|n| list.split(',').any(|w| w == *n))
                .collect();
            if names.len() != list.split(',').count() {
                eprintln!(
                    "make_bench_models: --only takes names from {:?}",
                    models::ALL
                );
                std::process::exit(2);
            }
        } else {
            usage();
        }
    }
    let made = match models::generate_some(std::path::Path::new(&dir), only_missing, &names) {
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
