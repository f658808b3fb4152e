//! The scripted shopper: searches with the goal's instruction, opens the goal's product (or the
//! listed product that would score best), clicks the goal's options and buys. It reads the
//! env's own state (page, last search, chosen options), so it also recovers from the random
//! steps of the noisy expert.

use super::catalogue::{Catalogue, Product};
use super::goals::Goal;
use super::pages::{Page, Session};
use super::reward::score_purchase;

/// The search text. The instruction, not `goal.query`: over 1000 training goals the
/// instruction puts the goal's product in the top 50 far more often (see the expert tests).
pub fn search_text(goal: &Goal) -> String {
    // `]` would end the argument early; the brackets carry no search meaning.
    goal.text.replace(['[', ']'], " ")
}

/// The clicks (lower-cased option values) that select the goal's options on `product`, in the
/// goal's order, with the options they select. A value the product does not offer, or one that
/// a click would give to another option name (the page selects the first name offering a
/// value), is left out: clicking it could never select it.
fn option_clicks(product: &Product, goal: &Goal) -> Vec<(String, (String, String))> {
    let mut out = Vec::new();
    for (name, want) in &goal.options {
        let value = want.to_lowercase();
        // What a click on `value` selects.
        let hit = product.options.iter().find_map(|(n, vs)| {
            vs.iter()
                .find(|v| v.to_lowercase() == value)
                .map(|v| (n.clone(), v.clone()))
        });
        // The parser trims its argument, so a value with outer white space is unclickable.
        if let Some((n, v)) = hit {
            if n == *name && value.trim() == value && !value.is_empty() {
                out.push((value, (n, v)));
            }
        }
    }
    out
}

/// The purchase score of `product` after the expert's option clicks.
fn expected_score(product: &Product, goal: &Goal) -> f64 {
    let chosen: Vec<(String, String)> = option_clicks(product, goal)
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    score_purchase(product, &chosen, goal).score
}

/// The product to buy among the results: the goal's own when listed, else the one with the
/// best expected score (the earlier one on ties, i.e. the better search rank).
fn target(session: &Session, cat: &Catalogue, goal: &Goal) -> Option<usize> {
    if session.results.contains(&goal.product) {
        return Some(goal.product);
    }
    let mut best: Option<(usize, f64)> = None;
    for &p in &session.results {
        let s = expected_score(&cat.products[p], goal);
        if best.is_none_or(|(_, b)| s > b) {
            best = Some((p, s));
        }
    }
    best.map(|(p, _)| p)
}

/// The expert's action (the text inside `<action>`), or `None` once the episode is over.
pub fn expert_action(session: &Session, cat: &Catalogue, goal: &Goal) -> Option<String> {
    let search = search_text(goal);
    // Results of another query (a random search) may miss the goal's product: search again.
    let own_query = session.query == search.trim().to_lowercase();
    match &session.page {
        Page::Done { .. } => None,
        Page::Search => Some(format!("search[{search}]")),
        Page::Results { page } => {
            let Some(p) = target(session, cat, goal).filter(|&p| own_query || p == goal.product)
            else {
                return Some("click[back to search]".into());
            };
            let at = session.results.iter().position(|&r| r == p)?;
            let want_page = at / session.per_page + 1;
            Some(if want_page > *page {
                "click[next >]".into()
            } else if want_page < *page {
                "click[< prev]".into()
            } else {
                format!("click[{}]", cat.products[p].asin.to_lowercase())
            })
        }
        Page::Sub { .. } => Some("click[< prev]".into()),
        Page::Item { product } => {
            let wanted = target(session, cat, goal);
            if wanted.is_some_and(|w| w != *product) && (own_query || wanted == Some(goal.product))
            {
                // A product opened by a random click: back to the results for the right one.
                return Some("click[< prev]".into());
            }
            for (click, option) in option_clicks(&cat.products[*product], goal) {
                if !session.chosen.contains(&option) {
                    return Some(format!("click[{click}]"));
                }
            }
            Some("click[buy now]".into())
        }
    }
}
