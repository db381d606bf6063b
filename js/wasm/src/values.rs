//! A tensor's values as `f32`s, from its bytes as stored in the file (which JavaScript read by
//! range), dequantized by the library: every type it reads.

use gguf::error::ErrorKind;
use gguf::{Error, GgufFile};

/// Tensor `index`'s values from `data`, its bytes as stored in the file.
pub fn tensor_values(file: &GgufFile<Vec<u8>>, index: u32, data: &[u8]) -> Result<Vec<f32>, Error> {
    let invalid = |message: String| Error::new(ErrorKind::InvalidArgument { message });
    let t = usize::try_from(index)
        .ok()
        .and_then(|i| file.tensor_at(i))
        .ok_or_else(|| {
            invalid(format!(
                "no tensor {index}: the file has {}",
                file.tensor_count()
            ))
        })?;
    if data.len() as u64 != t.size {
        return Err(invalid(format!(
            "tensor data of {} bytes given for a tensor of {} bytes",
            data.len(),
            t.size
        )));
    }
    let (_, n) = gguf::quant::buffer_lengths(t.dtype, t.n_elements)?;
    let mut floats = Vec::new();
    floats.try_reserve_exact(n).map_err(|_| {
        Error::new(ErrorKind::OutOfMemory {
            message: format!("{n} floats for tensor {index}"),
        })
    })?;
    floats.resize(n, 0.0f32);
    gguf::quant::dequantize_in_order(t.dtype, file.byte_order(), data, &mut floats)?;
    Ok(floats)
}
