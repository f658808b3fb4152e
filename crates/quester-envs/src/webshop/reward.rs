//! The purchase reward (upstream's formula):
//! R = (attribute matches + option matches + [price <= bound]) / (|attrs| + |options| + 1) * r_type.

use super::catalogue::Product;
use super::fuzz::thefuzz_token_set_ratio;
use super::goals::Goal;
use super::text::STOP_WORDS;
use serde::Serialize;

/// Fuzzy scores strictly above this count as a match.
pub const MATCH_THRESHOLD: u32 = 85;

/// Colour words, checked in this order: an option containing one is reduced to the first it
/// contains, so `"navy blue"` and `"blue"` compare as the same colour. Our own list of common
/// colour names (upstream keeps a similar list; see docs).
pub const COLORS: &[&str] = &[
    "alabaster",
    "amber",
    "apricot",
    "aqua",
    "beige",
    "black",
    "blue",
    "blush",
    "bronze",
    "brown",
    "burgundy",
    "camel",
    "camo",
    "caramel",
    "champagne",
    "charcoal",
    "chocolate",
    "coffee",
    "copper",
    "coral",
    "cream",
    "crimson",
    "cyan",
    "denim",
    "emerald",
    "fuchsia",
    "gold",
    "gray",
    "green",
    "grey",
    "indigo",
    "ivory",
    "khaki",
    "lavender",
    "lemon",
    "lilac",
    "lime",
    "magenta",
    "maroon",
    "mauve",
    "mint",
    "mocha",
    "multicolor",
    "mustard",
    "navy",
    "nude",
    "olive",
    "orange",
    "peach",
    "pink",
    "plum",
    "purple",
    "rainbow",
    "red",
    "rose",
    "rust",
    "sage",
    "salmon",
    "sand",
    "silver",
    "tan",
    "taupe",
    "teal",
    "turquoise",
    "violet",
    "walnut",
    "white",
    "wine",
    "yellow",
];

/// Reduces an option value to the first colour word it contains, else returns it unchanged.
pub fn normalize_color(value: &str) -> &str {
    COLORS
        .iter()
        .find(|c| value.contains(*c))
        .copied()
        .unwrap_or(value)
}

/// The reward and every part of it (reported in the buy step's `info`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RewardParts {
    /// R in [0, 1].
    pub score: f64,
    pub r_type: f64,
    pub query_match: bool,
    pub category_match: bool,
    pub title_score: f64,
    pub attr_matches: usize,
    pub n_attrs: usize,
    pub option_matches: usize,
    pub n_options: usize,
    pub price_ok: bool,
    /// The price paid (the product's price).
    pub price: f64,
}

/// Title "nouns" without a POS tagger: lower-cased alphabetic words of two or more letters that
/// are not stop words or common function words. Upstream keeps spaCy's NOUN/PROPN tokens.
pub fn title_nouns(title: &str) -> Vec<String> {
    const EXTRA: &[&str] = &[
        "from", "our", "your", "you", "we", "its", "his", "her", "all", "any", "each", "per",
        "than", "over", "under", "up", "out", "off", "so", "very", "can", "has", "have", "made",
        "new", "best", "set", "pack", "pcs", "piece", "pieces", "size", "color", "x",
    ];
    title
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| {
            w.chars().count() >= 2
                && w.chars().all(char::is_alphabetic)
                && !STOP_WORDS.contains(&w.as_str())
                && !EXTRA.contains(&w.as_str())
        })
        .collect()
}

/// Type reward: 1 for the same query, >= 2 shared category levels or a title overlap above 0.2;
/// else 0.5; overridden to 0.1 when the overlap is below 0.1 and to 0 when it is zero.
fn type_reward(product: &Product, goal: &Goal) -> (f64, bool, bool, f64) {
    let query_match = product.query == goal.query;
    let levels =
        |s: &str| -> Vec<String> { s.split('›').map(|x| x.trim().to_string()).collect() };
    let bought = levels(&product.product_category);
    let wanted = levels(&goal.product_category);
    let mut shared: Vec<&String> = bought.iter().filter(|l| wanted.contains(l)).collect();
    shared.sort();
    shared.dedup();
    let category_match = shared.len() >= 2;
    let desired = title_nouns(&goal.name);
    let purchased = title_nouns(&product.name);
    let title_score = if desired.is_empty() {
        0.2
    } else {
        let mut common: Vec<&String> = desired.iter().filter(|w| purchased.contains(w)).collect();
        common.sort();
        common.dedup();
        common.len() as f64 / desired.len() as f64
    };
    let mut r_type = 1.0;
    if !(query_match || category_match || title_score > 0.2) {
        r_type = 0.5;
    }
    if title_score < 0.1 {
        r_type = 0.1;
    }
    if title_score == 0.0 {
        r_type = 0.0;
    }
    (r_type, query_match, category_match, title_score)
}

fn attribute_matches(product: &Product, goal: &Goal) -> usize {
    let title = product.title.to_lowercase();
    let bullets = product.bullet_points.join(" ").to_lowercase();
    let description = product.description.to_lowercase();
    goal.attributes
        .iter()
        .filter(|g| {
            product
                .attributes
                .iter()
                .any(|p| thefuzz_token_set_ratio(p, g) > MATCH_THRESHOLD)
                || title.contains(g.as_str())
                || bullets.contains(g.as_str())
                || description.contains(g.as_str())
        })
        .count()
}

fn option_matches(chosen: &[(String, String)], goal: &Goal) -> usize {
    goal.options
        .iter()
        .filter(|(_, want)| {
            let want = normalize_color(want);
            chosen.iter().any(|(_, got)| {
                thefuzz_token_set_ratio(normalize_color(got), want) > MATCH_THRESHOLD
            })
        })
        .count()
}

/// Scores buying `product` with the `chosen` (name, value) options for `goal`.
pub fn score_purchase(product: &Product, chosen: &[(String, String)], goal: &Goal) -> RewardParts {
    let (r_type, query_match, category_match, title_score) = type_reward(product, goal);
    let attr_matches = attribute_matches(product, goal);
    let option_matches = option_matches(chosen, goal);
    let price_ok = product.price <= goal.price_upper;
    let n_attrs = goal.attributes.len();
    let n_options = goal.options.len();
    let hits = attr_matches + option_matches + usize::from(price_ok);
    let score = hits as f64 / (n_attrs + n_options + 1) as f64 * r_type;
    RewardParts {
        score,
        r_type,
        query_match,
        category_match,
        title_score,
        attr_matches,
        n_attrs,
        option_matches,
        n_options,
        price_ok,
        price: product.price,
    }
}
