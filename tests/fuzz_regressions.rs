//! Replays fuzz inputs through the fuzz targets' harness: every file in `fuzz/regressions/`
//! (crashes once found), the bundled sample, and its truncations and mutations.

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::Path;

/// Every file in `fuzz/<kind>/<target>` (path and bytes), sorted by path; none where the
/// directory is missing and `required` is false.
fn files(kind: &str, target: &str, required: bool) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
        .join(target);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if !required => {
            assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{}", dir.display());
            return Vec::new();
        }
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        found.push((path.display().to_string(), std::fs::read(&path).unwrap()));
    }
    found.sort();
    found
}

/// The crashes once found for `target` (fuzz/regressions/TARGET, which may not exist).
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    files("regressions", target, false)
}

#[test]
fn open_regressions_and_sample() {
    for (name, bytes) in inputs("open") {
        println!("replaying {name}");
        harness::exercise_open(&bytes);
    }
    let sample =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/sample.gguf")).unwrap();
    harness::exercise_open(&sample);
    // The header region cut at every byte, then bit flips across it.
    let header_end = 8192.min(sample.len());
    for cut in 0..header_end {
        harness::exercise_open(&sample[..cut]);
    }
    let mut mutated = sample[..header_end + 64].to_vec();
    for i in (0..header_end).step_by(7) {
        mutated[i] ^= 0x10;
        harness::exercise_open(&mutated);
        mutated[i] ^= 0x10;
    }
}

#[test]
fn roundtrip_regressions_and_seeds() {
    for (name, bytes) in inputs("roundtrip") {
        println!("replaying {name}");
        harness::exercise_roundtrip(&bytes);
    }
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for len in 0..300usize {
        let seed: Vec<u8> = (0..len * 4)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        harness::exercise_roundtrip(&seed);
    }
}

/// The seed corpus of `target` (fuzz/seeds/TARGET).
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    files("seeds", target, true)
}

#[test]
fn read_regressions_and_seeds() {
    for (name, bytes) in inputs("read") {
        println!("replaying {name}");
        harness::exercise_read(&bytes);
    }
    let seeds = seeds("read");
    assert!(
        seeds.len() >= 3,
        "fuzz/seeds/read holds {} models",
        seeds.len()
    );
    for (name, seed) in &seeds {
        println!("replaying {name}");
        harness::exercise_read(seed);
        // Every choice of the first bytes, one at a time; the file cut at every eighth byte;
        // bit flips across it.
        for i in 0..16 {
            let mut s = seed.clone();
            for v in [1, 0x80, 0xff] {
                s[i] = v;
                harness::exercise_read(&s);
            }
        }
        for cut in (16..seed.len()).step_by(8) {
            harness::exercise_read(&seed[..cut]);
        }
        let mut mutated = seed.clone();
        for i in (16..seed.len()).step_by(5) {
            mutated[i] ^= 0x04;
            harness::exercise_read(&mutated);
            mutated[i] ^= 0x04;
        }
    }
}

#[test]
fn tokenize_regressions_and_seeds() {
    for (name, bytes) in inputs("tokenize") {
        println!("replaying {name}");
        harness::exercise_tokenize(&bytes);
    }
    let seeds = seeds("tokenize");
    assert!(
        seeds.len() >= 19,
        "fuzz/seeds/tokenize holds {} vocabularies",
        seeds.len()
    );
    for (name, seed) in &seeds {
        println!("replaying {name}");
        // Each seed's vocabulary, unmutated, is one the tokenizer accepts.
        let (_, _, file) = harness::split_tokenize_input(seed);
        let f = gguf::GgufFile::from_bytes(file).unwrap();
        gguf::tokenizer::Tokenizer::from_file(&f).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Two values of each choice byte, one byte at a time; bit flips across the file.
        for i in 2..34 {
            let mut s = seed.clone();
            for v in [0x35, 0xc9] {
                s[i] = v;
                harness::exercise_tokenize(&s);
            }
        }
        let mut mutated = seed.clone();
        for i in (34..seed.len()).step_by(997) {
            mutated[i] ^= 0x21;
            harness::exercise_tokenize(&mutated);
            mutated[i] ^= 0x21;
        }
    }
}

#[test]
fn chat_regressions_and_seeds() {
    for (name, bytes) in inputs("chat") {
        println!("replaying {name}");
        harness::exercise_chat(&bytes);
    }
    let seeds = seeds("chat");
    assert!(
        seeds.len() >= 4,
        "fuzz/seeds/chat holds {} inputs",
        seeds.len()
    );
    for (name, seed) in &seeds {
        println!("replaying {name}");
        // Each seed renders unmutated.
        let (template, request) = harness::split_chat_input(seed);
        gguf::chat::ChatTemplate::new(std::str::from_utf8(template).unwrap())
            .and_then(|t| t.render(request))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // Bit flips across the template and the request.
        for i in (0..seed.len()).step_by(97) {
            let mut mutated = seed.clone();
            mutated[i] ^= 0x20;
            harness::exercise_chat(&mutated);
        }
    }
}

#[test]
fn requantize_regressions_and_seeds() {
    for (name, bytes) in inputs("requantize") {
        println!("replaying {name}");
        harness::exercise_requantize(&bytes);
    }
    let seeds = seeds("requantize");
    assert!(
        seeds.len() >= 6,
        "fuzz/seeds/requantize holds {}",
        seeds.len()
    );
    let t = std::time::Instant::now();
    for (name, seed) in &seeds {
        let t0 = std::time::Instant::now();
        harness::exercise_requantize(seed);
        if name.ends_with("nested-stars") {
            // Each search of it runs to the step bound: once is enough.
            continue;
        }
        // Each choice byte a few ways (writing the model where the last says so), then the
        // pattern lines cut at every few bytes.
        for i in 0..8 {
            let mut s = seed.clone();
            for v in [0x00, 0x04, 0x33, 0xff] {
                s[i] = v;
                harness::exercise_requantize(&s);
            }
        }
        for cut in (8..seed.len()).step_by(5) {
            let mut s = seed[..cut].to_vec();
            s[7] = 1; // plan only
            harness::exercise_requantize(&s);
        }
        println!("replayed {name} in {:?}", t0.elapsed());
    }
    // The hostile patterns among the seeds stay fast.
    assert!(t.elapsed().as_secs() < 30, "{:?}", t.elapsed());
}
