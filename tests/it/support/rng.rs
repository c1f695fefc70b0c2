//! The one seeded generator of the tests and the benches (benches/support
//! includes this file): xorshift64*, tiny, deterministic, dependency-free,
//! good enough to vary payloads, kill delays and synthetic secrets. Not for
//! anything that needs statistical quality.

/// xorshift64* over a 64-bit state; the same seed gives the same sequence
/// on every platform.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (forced odd: an all-zero state never moves).
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform enough in `[0, n)` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `n` characters drawn from `alphabet`.
    pub fn pick(&mut self, alphabet: &str, n: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..n)
            .map(|_| chars[self.below(chars.len() as u64) as usize])
            .collect()
    }
}
