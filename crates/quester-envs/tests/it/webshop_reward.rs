//! Hand-worked purchase rewards on real catalogue products.
//!
//! Goal: B09QCP4579 "LWLW High Waist Yoga Shorts ..." ($13.99, query "women's shorts"), text
//! "Find me butt lifting, light weight women's shorts with high waist, tummy control with color:
//! black, and size: 3x-large, and price lower than 30.00 dollars". It has 4 attributes (butt
//! lifting, light weight, high waist, tummy control), 2 options and the price condition, so
//! R = (attrs + options + price) / 7 * r_type.

use quester_envs::webshop::reward::{normalize_color, score_purchase, title_nouns};
use quester_envs::webshop::{Catalogue, Goal};
use std::sync::Arc;

const ASIN: &str = "B09QCP4579";

fn setup() -> (Arc<Catalogue>, Goal) {
    let cat = Catalogue::shared().unwrap();
    let goal = cat
        .goals
        .iter()
        .find(|g| {
            g.asin == ASIN
                && g.options
                    == vec![
                        ("color".to_string(), "black".to_string()),
                        ("size".to_string(), "3x-large".to_string()),
                    ]
        })
        .unwrap()
        .clone();
    assert_eq!(goal.price_upper, 30.0);
    assert_eq!(goal.attributes.len(), 4);
    (cat, goal)
}

fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn perfect_purchase_scores_one() {
    let (cat, goal) = setup();
    let p = &cat.products[cat.product_index(ASIN).unwrap()];
    let r = score_purchase(p, &opts(&[("color", "black"), ("size", "3x-large")]), &goal);
    // (4 + 2 + 1) / 7 * 1.0
    assert_eq!(r.score, 1.0);
    assert_eq!((r.attr_matches, r.option_matches, r.price_ok), (4, 2, true));
    assert!(r.query_match && r.category_match);
    // Title nouns: 17 words of which "shorts" twice; upstream divides the distinct shared words
    // by the length of the word list, so 16 / 17 (> 0.2, so r_type stays 1).
    assert_eq!(r.title_score, 16.0 / 17.0);
    assert_eq!(r.r_type, 1.0);
}

#[test]
fn missing_or_wrong_option_costs_one_seventh() {
    let (cat, goal) = setup();
    let p = &cat.products[cat.product_index(ASIN).unwrap()];
    // Size never chosen: (4 + 1 + 1) / 7.
    let r = score_purchase(p, &opts(&[("color", "black")]), &goal);
    assert_eq!(r.option_matches, 1);
    assert!((r.score - 6.0 / 7.0).abs() < 1e-12);
    // Size "small" instead of "3x-large": thefuzz("small", "3x large") = 15 <= 85, so still 6/7.
    let r = score_purchase(p, &opts(&[("color", "black"), ("size", "small")]), &goal);
    assert!((r.score - 6.0 / 7.0).abs() < 1e-12);
    // Nothing chosen: (4 + 0 + 1) / 7.
    let r = score_purchase(p, &[], &goal);
    assert!((r.score - 5.0 / 7.0).abs() < 1e-12);
    // Upstream's fuzzy quirk kept: "x-large" vs "3x-large" -> "x large" vs "3x large" scores
    // 100 - 100 * 1 / 15 = 93.3 > 85, so it counts as the right size.
    let r = score_purchase(p, &opts(&[("color", "black"), ("size", "x-large")]), &goal);
    assert_eq!(r.score, 1.0);
}

#[test]
fn price_over_the_bound_costs_one_seventh() {
    let (cat, mut goal) = setup();
    let p = &cat.products[cat.product_index(ASIN).unwrap()];
    // Same purchase, bound lowered to $10 < $13.99: (4 + 2 + 0) / 7.
    goal.price_upper = 10.0;
    let r = score_purchase(p, &opts(&[("color", "black"), ("size", "3x-large")]), &goal);
    assert!(!r.price_ok);
    assert!((r.score - 6.0 / 7.0).abs() < 1e-12);
}

#[test]
fn wrong_product_type() {
    let (cat, goal) = setup();
    // A console table (B06Y3VLDFB, $877.80): other query, no shared category level, no shared
    // title noun -> r_type 0 -> R = 0 whatever else matches.
    let table = &cat.products[cat.product_index("B06Y3VLDFB").unwrap()];
    let r = score_purchase(table, &opts(&[("color", "black")]), &goal);
    assert!(!r.query_match && !r.category_match);
    assert_eq!(r.title_score, 0.0);
    assert_eq!(r.r_type, 0.0);
    assert_eq!(r.score, 0.0);
    assert!(!r.price_ok);
}

#[test]
fn weak_type_match_halves_the_reward() {
    let (cat, mut goal) = setup();
    let p = &cat.products[cat.product_index(ASIN).unwrap()];
    // Make the goal's type differ: another query, a disjoint category, and a wanted title whose
    // nouns are [shorts, pillow, cover, case, lamp, desk]; only "shorts" is in the bought title,
    // so title_score = 1/6 (between 0.1 and 0.2): no match -> r_type 0.5 -> R = 7/7 * 0.5.
    goal.query = "desk lamps".into();
    goal.product_category = "Home › Lighting › Lamps".into();
    goal.name = "Shorts Pillow Cover Case Lamp Desk".into();
    assert_eq!(title_nouns(&goal.name).len(), 6);
    let r = score_purchase(p, &opts(&[("color", "black"), ("size", "3x-large")]), &goal);
    assert!((r.title_score - 1.0 / 6.0).abs() < 1e-12);
    assert_eq!(r.r_type, 0.5);
    assert_eq!(r.score, 0.5);
    // One shared noun of eleven (< 0.1) -> r_type 0.1.
    goal.name = "Shorts Pillow Cover Case Lamp Desk Chair Sofa Rug Mat Bed".into();
    let r = score_purchase(p, &opts(&[("color", "black"), ("size", "3x-large")]), &goal);
    assert_eq!(r.r_type, 0.1);
    assert!((r.score - 0.1).abs() < 1e-12);
}

#[test]
fn attribute_found_only_in_the_text_still_counts() {
    let (cat, mut goal) = setup();
    let p = &cat.products[cat.product_index(ASIN).unwrap()];
    // "biker shorts" is not among the product's attributes (best fuzzy score is below 86) but it
    // is a substring of the lower-cased title; "waterproof zipper" is nowhere.
    goal.attributes = vec!["biker shorts".into(), "waterproof zipper".into()];
    let r = score_purchase(p, &opts(&[("color", "black"), ("size", "3x-large")]), &goal);
    // (1 + 2 + 1) / (2 + 2 + 1)
    assert_eq!(r.attr_matches, 1);
    assert!((r.score - 4.0 / 5.0).abs() < 1e-12);
}

#[test]
fn colours_are_normalised_before_matching() {
    assert_eq!(normalize_color("navy blue"), "blue");
    assert_eq!(normalize_color("plain black"), "black");
    assert_eq!(normalize_color("3x-large"), "3x-large");
}

#[test]
fn every_goal_is_won_by_its_own_product_and_options() {
    let cat = Catalogue::shared().unwrap();
    let mut bad = Vec::new();
    for (i, g) in cat.goals.iter().enumerate() {
        let r = score_purchase(&cat.products[g.product], &g.options, g);
        if r.score != 1.0 {
            bad.push(format!("goal {i} ({}): {r:?}", g.asin));
        }
    }
    assert!(bad.is_empty(), "{} goals:\n{}", bad.len(), bad.join("\n"));
}
