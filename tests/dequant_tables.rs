//! `src/quant/tables.rs` is exactly what its generator, `tools/gen_quant_tables.py`, extracts
//! from the pinned reference package's `gguf.quants` (needs `.venv`, `make venv`).

mod common;

use common::{manifest_dir, reference_python, run};
use std::process::Command;

#[test]
fn committed_tables_equal_the_generator_s_output() {
    let out = run(Command::new(reference_python())
        .arg(manifest_dir().join("tools/gen_quant_tables.py"))
        .current_dir(manifest_dir()));
    let committed = std::fs::read(manifest_dir().join("src/quant/tables.rs")).unwrap();
    assert!(
        out.stdout == committed,
        "src/quant/tables.rs is stale: run `.venv/bin/python tools/gen_quant_tables.py > \
         src/quant/tables.rs`"
    );
}
