//! The format's two type systems: metadata value types and tensor data types.
//!
//! The data type table mirrors ggml's type traits today (`ggml-types.tsv` in the project's shared
//! reference). Ids that ggml removed (4, 5, 31-33, 36-38) have no variant, so a file naming one is
//! refused when it is opened.

use std::ffi::CStr;

/// The type of a metadata value, as stored in the file (`u32`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// 8-bit unsigned integer.
    Uint8 = 0,
    /// 8-bit signed integer.
    Int8 = 1,
    /// 16-bit unsigned integer.
    Uint16 = 2,
    /// 16-bit signed integer.
    Int16 = 3,
    /// 32-bit unsigned integer.
    Uint32 = 4,
    /// 32-bit signed integer.
    Int32 = 5,
    /// IEEE 754 single-precision float.
    Float32 = 6,
    /// Boolean stored in one byte (0 or 1).
    Bool = 7,
    /// Length-prefixed byte string (UTF-8 by convention, not checked).
    String = 8,
    /// Typed array: element type, element count, elements.
    Array = 9,
    /// 64-bit unsigned integer.
    Uint64 = 10,
    /// 64-bit signed integer.
    Int64 = 11,
    /// IEEE 754 double-precision float.
    Float64 = 12,
}

impl ValueType {
    /// Every value type, in id order.
    ///
    /// cbindgen:ignore
    pub const ALL: [ValueType; 13] = [
        ValueType::Uint8,
        ValueType::Int8,
        ValueType::Uint16,
        ValueType::Int16,
        ValueType::Uint32,
        ValueType::Int32,
        ValueType::Float32,
        ValueType::Bool,
        ValueType::String,
        ValueType::Array,
        ValueType::Uint64,
        ValueType::Int64,
        ValueType::Float64,
    ];

    /// The value type with this id, if there is one.
    pub fn from_id(id: u32) -> Option<ValueType> {
        Self::ALL.get(id as usize).copied()
    }

    /// The id stored in the file.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The encoded size of one value, or `None` for strings and arrays (variable length).
    pub fn fixed_size(self) -> Option<usize> {
        use ValueType::*;
        match self {
            Uint8 | Int8 | Bool => Some(1),
            Uint16 | Int16 => Some(2),
            Uint32 | Int32 | Float32 => Some(4),
            Uint64 | Int64 | Float64 => Some(8),
            String | Array => None,
        }
    }

    /// The name used by the specification, e.g. `"UINT32"`.
    pub fn name(self) -> &'static str {
        self.c_name().to_str().unwrap_or_default()
    }

    /// [`ValueType::name`], NUL-terminated.
    pub fn c_name(self) -> &'static CStr {
        use ValueType::*;
        match self {
            Uint8 => c"UINT8",
            Int8 => c"INT8",
            Uint16 => c"UINT16",
            Int16 => c"INT16",
            Uint32 => c"UINT32",
            Int32 => c"INT32",
            Float32 => c"FLOAT32",
            Bool => c"BOOL",
            String => c"STRING",
            Array => c"ARRAY",
            Uint64 => c"UINT64",
            Int64 => c"INT64",
            Float64 => c"FLOAT64",
        }
    }
}

/// The data type of a tensor (ggml's `ggml_type`), as stored in the file (`u32`). Each comment
/// gives the block geometry: elements per block, bytes per block.
#[repr(u32)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// F32: 1 element in 4 bytes per block.
    F32 = 0,
    /// F16: 1 element in 2 bytes per block.
    F16 = 1,
    /// Q4_0: 32 elements in 18 bytes per block.
    Q4_0 = 2,
    /// Q4_1: 32 elements in 20 bytes per block.
    Q4_1 = 3,
    /// Q5_0: 32 elements in 22 bytes per block.
    Q5_0 = 6,
    /// Q5_1: 32 elements in 24 bytes per block.
    Q5_1 = 7,
    /// Q8_0: 32 elements in 34 bytes per block.
    Q8_0 = 8,
    /// Q8_1: 32 elements in 36 bytes per block.
    Q8_1 = 9,
    /// Q2_K: 256 elements in 84 bytes per block.
    Q2_K = 10,
    /// Q3_K: 256 elements in 110 bytes per block.
    Q3_K = 11,
    /// Q4_K: 256 elements in 144 bytes per block.
    Q4_K = 12,
    /// Q5_K: 256 elements in 176 bytes per block.
    Q5_K = 13,
    /// Q6_K: 256 elements in 210 bytes per block.
    Q6_K = 14,
    /// Q8_K: 256 elements in 292 bytes per block.
    Q8_K = 15,
    /// IQ2_XXS: 256 elements in 66 bytes per block.
    IQ2_XXS = 16,
    /// IQ2_XS: 256 elements in 74 bytes per block.
    IQ2_XS = 17,
    /// IQ3_XXS: 256 elements in 98 bytes per block.
    IQ3_XXS = 18,
    /// IQ1_S: 256 elements in 50 bytes per block.
    IQ1_S = 19,
    /// IQ4_NL: 32 elements in 18 bytes per block.
    IQ4_NL = 20,
    /// IQ3_S: 256 elements in 110 bytes per block.
    IQ3_S = 21,
    /// IQ2_S: 256 elements in 82 bytes per block.
    IQ2_S = 22,
    /// IQ4_XS: 256 elements in 136 bytes per block.
    IQ4_XS = 23,
    /// I8: 1 element in 1 byte per block.
    I8 = 24,
    /// I16: 1 element in 2 bytes per block.
    I16 = 25,
    /// I32: 1 element in 4 bytes per block.
    I32 = 26,
    /// I64: 1 element in 8 bytes per block.
    I64 = 27,
    /// F64: 1 element in 8 bytes per block.
    F64 = 28,
    /// IQ1_M: 256 elements in 56 bytes per block.
    IQ1_M = 29,
    /// BF16: 1 element in 2 bytes per block.
    BF16 = 30,
    /// TQ1_0: 256 elements in 54 bytes per block.
    TQ1_0 = 34,
    /// TQ2_0: 256 elements in 66 bytes per block.
    TQ2_0 = 35,
    /// MXFP4: 32 elements in 17 bytes per block.
    MXFP4 = 39,
    /// NVFP4: 64 elements in 36 bytes per block.
    NVFP4 = 40,
    /// Q1_0: 128 elements in 18 bytes per block.
    Q1_0 = 41,
    /// Q2_0: 64 elements in 18 bytes per block.
    Q2_0 = 42,
}

impl DataType {
    /// Every data type ggml defines today, in id order.
    ///
    /// cbindgen:ignore
    pub const ALL: [DataType; 35] = [
        DataType::F32,
        DataType::F16,
        DataType::Q4_0,
        DataType::Q4_1,
        DataType::Q5_0,
        DataType::Q5_1,
        DataType::Q8_0,
        DataType::Q8_1,
        DataType::Q2_K,
        DataType::Q3_K,
        DataType::Q4_K,
        DataType::Q5_K,
        DataType::Q6_K,
        DataType::Q8_K,
        DataType::IQ2_XXS,
        DataType::IQ2_XS,
        DataType::IQ3_XXS,
        DataType::IQ1_S,
        DataType::IQ4_NL,
        DataType::IQ3_S,
        DataType::IQ2_S,
        DataType::IQ4_XS,
        DataType::I8,
        DataType::I16,
        DataType::I32,
        DataType::I64,
        DataType::F64,
        DataType::IQ1_M,
        DataType::BF16,
        DataType::TQ1_0,
        DataType::TQ2_0,
        DataType::MXFP4,
        DataType::NVFP4,
        DataType::Q1_0,
        DataType::Q2_0,
    ];

    /// The data type with this id, or `None` for ids that are unknown or were removed.
    pub fn from_id(id: u32) -> Option<DataType> {
        // A table by id, built at compile time from `ALL` (opening looks up every tensor's type).
        const BY_ID: [Option<DataType>; 64] = {
            let mut table = [None; 64];
            let mut i = 0;
            while i < DataType::ALL.len() {
                table[DataType::ALL[i] as usize] = Some(DataType::ALL[i]);
                i += 1;
            }
            table
        };
        BY_ID.get(id as usize).copied().flatten()
    }

    /// Name (NUL-terminated), elements per block and bytes per block: the one table of each
    /// type's traits. Inlined (with the two accessors below): opening sizes every tensor, and a
    /// call per field cost more than the lookup.
    #[inline]
    const fn traits(self) -> (&'static CStr, u64, u64) {
        use DataType::*;
        match self {
            F32 => (c"F32", 1, 4),
            F16 => (c"F16", 1, 2),
            Q4_0 => (c"Q4_0", 32, 18),
            Q4_1 => (c"Q4_1", 32, 20),
            Q5_0 => (c"Q5_0", 32, 22),
            Q5_1 => (c"Q5_1", 32, 24),
            Q8_0 => (c"Q8_0", 32, 34),
            Q8_1 => (c"Q8_1", 32, 36),
            Q2_K => (c"Q2_K", 256, 84),
            Q3_K => (c"Q3_K", 256, 110),
            Q4_K => (c"Q4_K", 256, 144),
            Q5_K => (c"Q5_K", 256, 176),
            Q6_K => (c"Q6_K", 256, 210),
            Q8_K => (c"Q8_K", 256, 292),
            IQ2_XXS => (c"IQ2_XXS", 256, 66),
            IQ2_XS => (c"IQ2_XS", 256, 74),
            IQ3_XXS => (c"IQ3_XXS", 256, 98),
            IQ1_S => (c"IQ1_S", 256, 50),
            IQ4_NL => (c"IQ4_NL", 32, 18),
            IQ3_S => (c"IQ3_S", 256, 110),
            IQ2_S => (c"IQ2_S", 256, 82),
            IQ4_XS => (c"IQ4_XS", 256, 136),
            I8 => (c"I8", 1, 1),
            I16 => (c"I16", 1, 2),
            I32 => (c"I32", 1, 4),
            I64 => (c"I64", 1, 8),
            F64 => (c"F64", 1, 8),
            IQ1_M => (c"IQ1_M", 256, 56),
            BF16 => (c"BF16", 1, 2),
            TQ1_0 => (c"TQ1_0", 256, 54),
            TQ2_0 => (c"TQ2_0", 256, 66),
            MXFP4 => (c"MXFP4", 32, 17),
            NVFP4 => (c"NVFP4", 64, 36),
            Q1_0 => (c"Q1_0", 128, 18),
            Q2_0 => (c"Q2_0", 64, 18),
        }
    }

    /// ggml's name for the type, e.g. `"Q4_K"`.
    pub fn name(self) -> &'static str {
        self.c_name().to_str().unwrap_or_default()
    }

    /// [`DataType::name`], NUL-terminated.
    pub fn c_name(self) -> &'static CStr {
        self.traits().0
    }

    /// Number of elements in one block (1 for plain types such as F32).
    #[inline]
    pub const fn block_elems(self) -> u64 {
        self.traits().1
    }

    /// Number of bytes one block occupies.
    #[inline]
    pub const fn block_bytes(self) -> u64 {
        self.traits().2
    }

    /// The id stored in the file.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// Bytes taken by a row of `first_dim` elements, or `None` when `first_dim` is not a whole
    /// number of blocks.
    #[inline(always)]
    pub fn row_bytes(self, first_dim: u64) -> Option<u64> {
        let block = self.block_elems();
        // Every block size is a power of two: a mask and a shift rather than a division (opening
        // sizes every tensor).
        let (blocks, rest) = if block.is_power_of_two() {
            (first_dim >> block.trailing_zeros(), first_dim & (block - 1))
        } else {
            (first_dim / block, first_dim % block)
        };
        if rest != 0 {
            return None;
        }
        blocks.checked_mul(self.block_bytes())
    }

    /// Bytes taken by a tensor of these dimensions, or `None` when the first dimension is not a
    /// whole number of blocks or the size does not fit in 64 bits.
    #[inline(always)]
    pub fn tensor_bytes(self, dims: &[u64]) -> Option<u64> {
        let (&first, rest) = match dims.split_first() {
            Some(split) => split,
            None => (&1, &[][..]),
        };
        let row = self.row_bytes(first)?;
        rest.iter().try_fold(row, |acc, &d| acc.checked_mul(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_type_ids_round_trip() {
        for (i, t) in ValueType::ALL.iter().enumerate() {
            assert_eq!(t.id() as usize, i);
            assert_eq!(ValueType::from_id(u32::try_from(i).unwrap()), Some(*t));
        }
        assert_eq!(ValueType::from_id(13), None);
        assert_eq!(ValueType::from_id(u32::MAX), None);
    }

    #[test]
    fn data_type_table_matches_reference_tsv() {
        let tsv = include_str!("../tests/data/ggml-types.tsv");
        let rows: Vec<_> = tsv
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("id"))
            .collect();
        assert_eq!(rows.len(), DataType::ALL.len());
        for row in rows {
            let f: Vec<&str> = row.split('\t').collect();
            let id: u32 = f[0].parse().unwrap();
            let t = DataType::from_id(id).unwrap_or_else(|| panic!("missing id {id}"));
            assert_eq!(t.name(), f[1]);
            assert_eq!(t.block_elems(), f[2].parse::<u64>().unwrap());
            assert_eq!(t.block_bytes(), f[3].parse::<u64>().unwrap());
        }
        for removed in [4, 5, 31, 32, 33, 36, 37, 38, 43, 1000] {
            assert_eq!(DataType::from_id(removed), None);
        }
    }

    #[test]
    fn tensor_bytes_checks_blocks_and_overflow() {
        assert_eq!(DataType::Q4_0.tensor_bytes(&[4096, 4096]), Some(9_437_184));
        assert_eq!(DataType::Q4_0.tensor_bytes(&[33]), None);
        assert_eq!(DataType::F32.tensor_bytes(&[]), Some(4));
        assert_eq!(DataType::F32.tensor_bytes(&[0, 7]), Some(0));
        assert_eq!(DataType::F32.tensor_bytes(&[1 << 62, 2]), None);
        assert_eq!(DataType::I8.tensor_bytes(&[1 << 32, 1 << 32]), None);
    }
}
