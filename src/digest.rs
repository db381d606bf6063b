//! Digests of tensor data: SHA-1, SHA-256, XXH64, XXH3-64 and the llama.cpp model UUID, as
//! llama.cpp's `gguf_hash.py` and `llama-gguf-hash` compute them, so that a model's manifest made
//! by either tool can be checked with this library.
//!
//! The hashing is done by RustCrypto's `sha1` / `sha2` (which use the CPU's SHA instructions when
//! it has them, detected at run time) and `xxhash-rust`; this module only names the algorithms,
//! sizes their outputs and feeds them bytes.

use crate::file::TensorInfo;
use sha1::Digest as _;
use std::fmt;

/// A digest algorithm. The numeric values are part of the C API (`GGUF_DIGEST_ALGORITHM_*`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DigestAlgorithm {
    /// SHA-1: 20 bytes.
    Sha1 = 1,
    /// SHA-256: 32 bytes.
    Sha256 = 2,
    /// XXH64 with seed 0: 8 bytes, most significant byte first (as its hex is printed).
    Xxh64 = 3,
    /// XXH3 64-bit with seed 0: 8 bytes, most significant byte first.
    Xxh3 = 4,
    /// The llama.cpp model UUID: a version-5 UUID, the SHA-1 of the llama.cpp namespace
    /// (`ef001206-dadc-5f6d-a15f-3359e577d4e5`) followed by the data: 16 bytes.
    Uuid = 5,
}

/// The llama.cpp UUID namespace: `uuid5(NAMESPACE_URL, "en.wikipedia.org/wiki/Llama.cpp")`.
const UUID_NAMESPACE_LLAMA_CPP: [u8; 16] = [
    0xef, 0x00, 0x12, 0x06, 0xda, 0xdc, 0x5f, 0x6d, 0xa1, 0x5f, 0x33, 0x59, 0xe5, 0x77, 0xd4, 0xe5,
];

/// The largest digest any algorithm produces, in bytes.
pub const MAX_DIGEST_SIZE: usize = 32;

impl DigestAlgorithm {
    /// Every algorithm, in the order of their ids.
    ///
    /// cbindgen:ignore
    pub const ALL: [DigestAlgorithm; 5] = [
        DigestAlgorithm::Sha1,
        DigestAlgorithm::Sha256,
        DigestAlgorithm::Xxh64,
        DigestAlgorithm::Xxh3,
        DigestAlgorithm::Uuid,
    ];

    /// The algorithm with this id (its C value), if any.
    pub fn from_id(id: u32) -> Option<DigestAlgorithm> {
        DigestAlgorithm::ALL.into_iter().find(|a| a.id() == id)
    }

    /// Its id, the C enum's value.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// Its name as the manifests write it: "sha1", "sha256", "xxh64", "xxh3", "uuid".
    pub fn name(self) -> &'static str {
        match self {
            DigestAlgorithm::Sha1 => "sha1",
            DigestAlgorithm::Sha256 => "sha256",
            DigestAlgorithm::Xxh64 => "xxh64",
            DigestAlgorithm::Xxh3 => "xxh3",
            DigestAlgorithm::Uuid => "uuid",
        }
    }

    /// The algorithm a manifest names so.
    pub fn from_name(name: &str) -> Option<DigestAlgorithm> {
        DigestAlgorithm::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The size of its digests in bytes.
    pub fn size(self) -> usize {
        match self {
            DigestAlgorithm::Sha1 => 20,
            DigestAlgorithm::Sha256 => 32,
            DigestAlgorithm::Xxh64 | DigestAlgorithm::Xxh3 => 8,
            DigestAlgorithm::Uuid => 16,
        }
    }
}

/// A finished digest.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    algorithm: DigestAlgorithm,
    bytes: [u8; MAX_DIGEST_SIZE],
}

impl Digest {
    /// The algorithm that made it.
    pub fn algorithm(&self) -> DigestAlgorithm {
        self.algorithm
    }

    /// Its bytes (`algorithm().size()` of them).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.algorithm.size()]
    }

    fn new(algorithm: DigestAlgorithm, bytes: &[u8]) -> Digest {
        let mut d = Digest {
            algorithm,
            bytes: [0; MAX_DIGEST_SIZE],
        };
        d.bytes[..bytes.len()].copy_from_slice(bytes);
        d
    }
}

/// Lowercase hex, as the manifests write it; a UUID in its 8-4-4-4-12 form.
impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.as_bytes().iter().enumerate() {
            if self.algorithm == DigestAlgorithm::Uuid && matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {self}", self.algorithm.name())
    }
}

enum State {
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
    Xxh64(xxhash_rust::xxh64::Xxh64),
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
}

/// A digest being computed over bytes fed in pieces: the same result as [`digest`] over their
/// concatenation.
pub struct Digester {
    algorithm: DigestAlgorithm,
    state: State,
}

impl Digester {
    /// A fresh digester.
    pub fn new(algorithm: DigestAlgorithm) -> Digester {
        let state = match algorithm {
            DigestAlgorithm::Sha1 => State::Sha1(sha1::Sha1::new()),
            DigestAlgorithm::Uuid => {
                let mut h = sha1::Sha1::new();
                h.update(UUID_NAMESPACE_LLAMA_CPP);
                State::Sha1(h)
            }
            DigestAlgorithm::Sha256 => State::Sha256(sha2::Sha256::new()),
            DigestAlgorithm::Xxh64 => State::Xxh64(xxhash_rust::xxh64::Xxh64::new(0)),
            DigestAlgorithm::Xxh3 => State::Xxh3(Box::new(xxhash_rust::xxh3::Xxh3::new())),
        };
        Digester { algorithm, state }
    }

    /// Its algorithm.
    pub fn algorithm(&self) -> DigestAlgorithm {
        self.algorithm
    }

    /// Feeds `data`.
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.state {
            State::Sha1(h) => h.update(data),
            State::Sha256(h) => h.update(data),
            State::Xxh64(h) => h.update(data),
            State::Xxh3(h) => h.update(data),
        }
    }

    /// The digest of everything fed so far; the digester starts afresh.
    pub fn finish(&mut self) -> Digest {
        let algorithm = self.algorithm;
        let fresh = Digester::new(algorithm).state;
        match std::mem::replace(&mut self.state, fresh) {
            State::Sha1(h) => {
                let mut out: [u8; 20] = h.finalize().into();
                if algorithm == DigestAlgorithm::Uuid {
                    // RFC 9562: version 5 in the high nibble of byte 6, variant 0b10 in byte 8.
                    out[6] = (out[6] & 0x0f) | 0x50;
                    out[8] = (out[8] & 0x3f) | 0x80;
                }
                Digest::new(algorithm, &out[..algorithm.size()])
            }
            State::Sha256(h) => Digest::new(algorithm, &h.finalize()),
            State::Xxh64(h) => Digest::new(algorithm, &h.digest().to_be_bytes()),
            State::Xxh3(h) => Digest::new(algorithm, &h.digest().to_be_bytes()),
        }
    }
}

/// The digest of `data`.
pub fn digest(algorithm: DigestAlgorithm, data: &[u8]) -> Digest {
    let mut d = Digester::new(algorithm);
    d.update(data);
    d.finish()
}

/// The digest of a tensor's data as stored in the file (what `gguf_hash.py` prints per tensor).
pub fn tensor_digest(tensor: &TensorInfo<'_>, algorithm: DigestAlgorithm) -> Digest {
    digest(algorithm, tensor.data)
}

/// Whether `gguf_hash.py` leaves this tensor out of its output and of the model's digests (names
/// ending in `.attention.masked_bias`, `.attention.bias` or `.rotary_emb.inv_freq`: buffers that
/// old converters stored, not weights). `llama-gguf-hash` hashes every tensor.
pub fn skipped_by_reference(name: &[u8]) -> bool {
    [
        &b".attention.masked_bias"[..],
        b".attention.bias",
        b".rotary_emb.inv_freq",
    ]
    .iter()
    .any(|suffix| name.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: Digest) -> String {
        d.to_string()
    }

    #[test]
    fn known_answers() {
        use DigestAlgorithm::*;
        for (algorithm, data, want) in [
            // FIPS 180 test vectors and the xxHash reference values.
            (
                Sha1,
                &b"abc"[..],
                "a9993e364706816aba3e25717850c26c9cd0d89d",
            ),
            (
                Sha256,
                b"abc",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (Xxh64, b"", "ef46db3751d8e999"),
            (Xxh3, b"", "2d06800538d394c2"),
            (Xxh64, b"abc", "44bc2cf5ad770999"),
            // Python: uuid.UUID(bytes=sha1(NAMESPACE.bytes + data).digest()[:16], version=5).
            (Uuid, b"", "6b2748e2-363e-5825-9e7a-d9b30f33ac5b"),
            (Uuid, b"abc", "9f2200fc-45e8-5a39-9535-c3ea5c0e0cef"),
        ] {
            assert_eq!(
                hex(digest(algorithm, data)),
                want,
                "{algorithm:?} of {data:?}"
            );
        }
    }

    #[test]
    fn pieces_give_the_same_digest_as_the_whole() {
        let data: Vec<u8> = (0..100_000u32)
            .map(|i| (i * 7 + i / 3).to_le_bytes()[0])
            .collect();
        for a in DigestAlgorithm::ALL {
            let whole = digest(a, &data);
            let mut d = Digester::new(a);
            for piece in data.chunks(4093) {
                d.update(piece);
            }
            assert_eq!(d.finish(), whole, "{a:?}");
            // finish starts afresh.
            d.update(&data);
            assert_eq!(d.finish(), whole, "{a:?} after finish");
            assert_eq!(DigestAlgorithm::from_id(a.id()), Some(a));
            assert_eq!(DigestAlgorithm::from_name(a.name()), Some(a));
            assert_eq!(whole.as_bytes().len(), a.size());
        }
        assert_eq!(DigestAlgorithm::from_id(0), None);
    }

    #[test]
    fn the_reference_skips_three_kinds_of_buffers() {
        assert!(skipped_by_reference(b"h.0.attention.masked_bias"));
        assert!(skipped_by_reference(b"h.0.attention.bias"));
        assert!(skipped_by_reference(b"l.rotary_emb.inv_freq"));
        assert!(!skipped_by_reference(b"h.0.attention.bias.weight"));
        assert!(!skipped_by_reference(b"attention.bias"));
    }
}
