//! A model's tensor values checked as ggml checks them (`ggml_validate_row_data`): in memory, or
//! read by position a piece of whole blocks at a time (a few MiB of memory, whatever the
//! tensor's size).

use crate::error::{Error, ErrorCode, Result};
use crate::model::Model;
use crate::source::Source;
use crate::text::quote;

/// Checks tensor `i` of `model`: no NaN or infinity among the values of a float tensor, nor in
/// any quantized block's scales (see `quant::validate`). Errors name the tensor, the first bad
/// element or block, and its offset in the file; the caller adds the file's name.
pub fn validate_tensor(model: &Model<Source>, i: usize) -> Result<()> {
    let t = model
        .tensor_at(i)
        .ok_or_else(|| Error::msg(ErrorCode::Internal, format!("tensor {i} has no record")))?;
    let shard = &model.shards()[t.shard];
    if shard.source().in_memory() {
        return crate::quant::validate::validate(
            quote(t.info.name),
            t.info.dtype,
            t.info.data,
            shard.byte_order(),
            t.info.file_offset,
        );
    }
    const PIECE: u64 = 8 << 20;
    let (dtype, size) = (t.info.dtype, t.info.size);
    let block = dtype.block_bytes().max(1);
    let piece = (PIECE / block).max(1) * block;
    let order = shard.byte_order();
    let mut buf = vec![0u8; usize::try_from(piece.min(size)).unwrap_or(0)];
    let mut at = 0;
    while at < size {
        let n = piece.min(size - at);
        let chunk = &mut buf[..usize::try_from(n).unwrap_or(0)];
        crate::load::read_tensor(model, i, at, chunk)?;
        if let Some(mut bad) = crate::quant::validate::find_bad_value(dtype, chunk, order) {
            // Indices and offsets in the whole tensor, not in this piece.
            bad.index += at / block;
            bad.byte += at;
            return Err(bad.error(quote(t.info.name), dtype, t.info.file_offset));
        }
        at += n;
    }
    Ok(())
}
