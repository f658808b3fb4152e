//! CPython's `random` module, just the parts upstream WebShop uses for its goals: MT19937 seeded
//! like `random.seed(int)`, `random()`, `uniform`, `_randbelow`, `shuffle` and `sample` (small
//! populations). With it our goal prices and the goal shuffle equal upstream's draw for draw
//! (checked against CPython in `tests/fixtures/webshop_pyrandom.json`).

const N: usize = 624;
const M: usize = 397;

/// A Mersenne Twister with CPython's seeding and sampling routines.
#[derive(Clone)]
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
}

impl PyRandom {
    /// Same state as CPython's `random.seed(seed)` for a non-negative integer seed.
    pub fn new(seed: u64) -> Self {
        // CPython splits abs(seed) into 32-bit words, least significant first (at least one word).
        let mut key = vec![seed as u32];
        if seed >> 32 != 0 {
            key.push((seed >> 32) as u32);
        }
        let mut r = PyRandom {
            mt: [0; N],
            index: N,
        };
        r.init_genrand(19_650_218);
        let mut i = 1usize;
        let mut j = 0usize;
        for _ in 0..N.max(key.len()) {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                r.mt[0] = r.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                r.mt[0] = r.mt[N - 1];
                i = 1;
            }
        }
        r.mt[0] = 0x8000_0000;
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..N {
            let prev = self.mt[i - 1] ^ (self.mt[i - 1] >> 30);
            self.mt[i] = 1_812_433_253u32.wrapping_mul(prev).wrapping_add(i as u32);
        }
        self.index = N;
    }

    /// The next raw 32-bit output (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            for k in 0..N {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % N] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random.random()`: 53-bit float in [0, 1).
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }

    /// `random.uniform(a, b)`.
    pub fn uniform(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.random()
    }

    /// `random._randbelow(n)` for 0 < n < 2^32 (rejection sampling on `getrandbits`).
    pub fn randbelow(&mut self, n: u32) -> u32 {
        if n <= 1 {
            return 0;
        }
        let k = 32 - n.leading_zeros();
        loop {
            let r = self.next_u32() >> (32 - k);
            if r < n {
                return r;
            }
        }
    }

    /// `random.shuffle(x)` in place.
    pub fn shuffle<T>(&mut self, x: &mut [T]) {
        for i in (1..x.len()).rev() {
            let j = self.randbelow(i as u32 + 1) as usize;
            x.swap(i, j);
        }
    }

    /// `random.sample(population, k)` for populations of at most 21 items (CPython's pool
    /// method, the only one upstream reaches). `None` when k > len or the population is larger.
    pub fn sample<T: Clone>(&mut self, population: &[T], k: usize) -> Option<Vec<T>> {
        let n = population.len();
        if k > n || n > 21 || k > 5 {
            return None;
        }
        let mut pool = population.to_vec();
        let mut out = Vec::with_capacity(k);
        for i in 0..k {
            let j = self.randbelow((n - i) as u32) as usize;
            out.push(pool[j].clone());
            pool[j] = pool[n - i - 1].clone();
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_mt19937_first_output() {
        // CPython: random.seed(0); random.getrandbits(32) == 3626764237
        let mut r = PyRandom::new(0);
        assert_eq!(r.next_u32(), 3_626_764_237);
        // CPython: random.seed(42); random.random() == 0.6394267984578837
        let mut r = PyRandom::new(42);
        assert_eq!(r.random(), 0.639_426_798_457_883_7);
    }
}
