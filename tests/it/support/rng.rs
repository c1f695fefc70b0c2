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

#[test]
fn the_sequence_is_pinned() {
    // The benches' generated inputs depend on these exact values (worked
    // out independently of this code); a change here changes every figure.
    let mut rng = Rng::new(0x5eed);
    assert_eq!(
        [rng.next(), rng.next(), rng.next()],
        [
            0x970d_7842_0bec_184a,
            0xc7e2_c283_945e_48d8,
            0xe90a_11ce_3da0_4682
        ]
    );
}
