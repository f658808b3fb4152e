//! Synthetic goals: every product with an instruction x every combination of its option values,
//! with a price bound, shuffled with upstream's seed. Test split = the first 500, train = the rest.

use super::catalogue::Product;
use super::pyrandom::PyRandom;

/// The shuffle seed upstream uses before splitting (`random.seed(233)`).
pub const SHUFFLE_SEED: u64 = 233;
/// Number of test goals at the front of the shuffled list.
pub const TEST_GOALS: usize = 500;
/// Upstream's bound when there is no price condition (always satisfied).
pub const NO_PRICE_BOUND: f64 = 1_000_000.0;

/// One shopping task.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// The target product's ASIN and index in the catalogue.
    pub asin: String,
    pub product: usize,
    /// The instruction shown to the agent.
    pub text: String,
    /// The attributes the reward checks (`instruction_attributes`).
    pub attributes: Vec<String>,
    /// Option name -> wanted value, names sorted.
    pub options: Vec<(String, String)>,
    /// Price bound in dollars ([`NO_PRICE_BOUND`] when the text states none).
    pub price_upper: f64,
    pub query: String,
    pub name: String,
    pub product_category: String,
}

/// The price bound grid 10, 20, ..., 990.
fn price_grid() -> impl Iterator<Item = f64> {
    (1..100).map(|i| 10.0 * f64::from(i))
}

/// Goals in catalogue order (before the shuffle). `rng` is the stream that drew the prices.
pub fn synthetic_goals(products: &[Product], rng: &mut PyRandom) -> Vec<Goal> {
    let mut goals = Vec::new();
    for (idx, p) in products.iter().enumerate() {
        let Some(instruction) = &p.instruction else {
            continue;
        };
        let above: Vec<f64> = price_grid().filter(|&v| v > p.price).take(4).collect();
        // Sample two of the (up to) four values above the price, keep the larger.
        let (price_upper, price_text) = match rng.sample(&above, 2) {
            Some(two) if above.len() >= 2 => {
                let upper = two[0].max(two[1]);
                (upper, format!(", and price lower than {upper:.2} dollars"))
            }
            _ => (NO_PRICE_BOUND, String::new()),
        };
        let mut names: Vec<&(String, Vec<String>)> = p.options.iter().collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for combo in combinations(&names) {
            let options: Vec<(String, String)> = names
                .iter()
                .zip(&combo)
                .map(|(n, v)| (n.0.clone(), v.clone()))
                .collect();
            let joined = options
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", and ");
            let option_text = if joined.is_empty() {
                String::new()
            } else {
                format!(" with {joined}")
            };
            goals.push(Goal {
                asin: p.asin.clone(),
                product: idx,
                text: format!("{instruction}{option_text}{price_text}"),
                attributes: p.instruction_attributes.clone(),
                options,
                price_upper,
                query: p.query.clone(),
                name: p.title.clone(),
                product_category: p.product_category.clone(),
            });
        }
    }
    goals
}

/// The cartesian product of the option value lists, last list varying fastest (like
/// `itertools.product`). No options -> one empty combination; an empty list -> none.
fn combinations(names: &[&(String, Vec<String>)]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    for (_, values) in names {
        let mut next = Vec::with_capacity(out.len() * values.len());
        for prefix in &out {
            for v in values {
                let mut c = prefix.clone();
                c.push(v.clone());
                next.push(c);
            }
        }
        out = next;
    }
    out
}

/// Shuffles like upstream's `random.seed(233); random.shuffle(goals)`.
pub fn shuffle_like_upstream(goals: &mut [Goal]) {
    PyRandom::new(SHUFFLE_SEED).shuffle(goals);
}
