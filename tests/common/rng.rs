//! Small deterministic generators, so random test data is the same on every run and platform.
//! Standalone (no other helper): the examples include this file by path as well.

#![allow(dead_code)]

/// xorshift64 (shifts 13, 7, 17).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `n` bytes, the low byte of each number.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    /// Below `n` (by remainder).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in [0, 1), from 24 bits (exact).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / 16_777_216.0
    }

    /// Roughly normal (a sum of four uniforms, centred), scaled: every step exact in f32.
    pub fn normal(&mut self, scale: f32) -> f32 {
        let s = self.unit() + self.unit() + self.unit() + self.unit() - 2.0;
        s * scale
    }

    /// Uniform in [-1, 1), exactly (24 random bits scaled by a power of two).
    pub fn uniform(&mut self) -> f32 {
        ((self.next() >> 40) as f32) * (1.0 / 8_388_608.0) - 1.0
    }

    /// Roughly bell-shaped values, like a weight matrix's (the sum of three uniforms).
    pub fn bell(&mut self) -> f32 {
        self.uniform() + self.uniform() + self.uniform()
    }

    /// A positive importance weight in [1/64, 4).
    pub fn weight(&mut self) -> f32 {
        ((self.next() >> 40) as f32) * (1.0 / 4_194_304.0) + 1.0 / 64.0
    }
}

/// xorshift64* (shifts 12, 25, 27, then a multiplication).
pub struct RngStar(pub u64);

impl RngStar {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Below `n` (by remainder).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
