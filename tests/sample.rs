//! The bundled sample model is what `examples/make_sample.rs` writes, and reads as a model.

#[path = "../examples/make_sample.rs"]
#[allow(dead_code)]
mod make_sample;

use gguf::{MappedFile, Value};

const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/sample.gguf");

#[test]
fn committed_sample_matches_its_generator() {
    let committed = std::fs::read(SAMPLE).expect("testdata/sample.gguf");
    assert!(
        committed == make_sample::sample_model(),
        "testdata/sample.gguf is stale: run `cargo run --example make_sample`"
    );
}

#[test]
fn sample_reads_as_a_llama_model() {
    let f = MappedFile::open(SAMPLE).unwrap();
    assert_eq!(f.get("general.architecture"), Some(Value::String(b"llama")));
    let tokens = f.get("tokenizer.ggml.tokens").unwrap().as_array().unwrap();
    let scores = f.get("tokenizer.ggml.scores").unwrap().as_array().unwrap();
    let types = f
        .get("tokenizer.ggml.token_type")
        .unwrap()
        .as_array()
        .unwrap();
    assert_eq!(tokens.len(), scores.len());
    assert_eq!(tokens.len(), types.len());
    assert_eq!(tokens.strings().unwrap().nth(1), Some(&b"<s>"[..]));
    let embd = f.tensor("token_embd.weight").unwrap();
    assert_eq!(embd.dims[1], tokens.len());
    assert_eq!(f.tensor_count(), 2 + 9 * 2 + 1);
}

/// The weights are random, but every float value and block scale is finite: ggml would run the
/// sample, and `gguf-inspect --verify` passes it.
#[test]
fn sample_values_are_all_finite() {
    let f = MappedFile::open(SAMPLE).unwrap();
    let mut quantized = 0;
    for t in f.tensors() {
        let name = String::from_utf8(t.name.to_vec()).unwrap();
        gguf::quant::validate::validate(name, t.dtype, t.data, f.byte_order(), t.file_offset)
            .unwrap();
        quantized += usize::from(t.dtype.block_elems() > 1);
    }
    // Most tensors are quantized: the check covered block scales, not only plain floats.
    assert!(quantized > f.tensor_count() / 2);
}
