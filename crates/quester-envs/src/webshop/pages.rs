//! The page model: which page is shown, what can be clicked on it, how it renders as text, and how
//! an action moves between pages. Pure state; rewards are computed by the env on `buy now`.

use super::action::ShopAction;
use super::catalogue::Catalogue;

/// Separator between the visible strings of a page (WebShop's text mode).
pub const SEP: &str = " [SEP] ";

/// The item sub-pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubPage {
    Description,
    Features,
    Reviews,
}

/// Where the shopper is.
#[derive(Debug, Clone, PartialEq)]
pub enum Page {
    /// The start page with the search box.
    Search,
    /// Results page `page` (1-based) of the last search.
    Results { page: usize },
    /// A product page.
    Item { product: usize },
    /// A sub-page of a product.
    Sub { product: usize, kind: SubPage },
    /// After `buy now`.
    Done { product: usize },
}

/// What a valid action led to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Moved,
    /// `buy now` on this product with these options.
    Bought {
        product: usize,
        options: Vec<(String, String)>,
    },
}

/// One shopping session: the page, the last search and the options chosen on the current item.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub page: Page,
    pub query: String,
    /// Product indices of the last search, best first.
    pub results: Vec<usize>,
    /// The results page an item was opened from (`< prev` returns there).
    pub results_page: usize,
    /// (option name, value) chosen on the current item, in click order, one per name.
    pub chosen: Vec<(String, String)>,
    pub top_k: usize,
    pub per_page: usize,
}

impl Session {
    /// A fresh session on the search page.
    pub fn new(top_k: usize, per_page: usize) -> Self {
        Session {
            page: Page::Search,
            query: String::new(),
            results: Vec::new(),
            results_page: 1,
            chosen: Vec::new(),
            top_k,
            per_page: per_page.max(1),
        }
    }

    fn page_count(&self) -> usize {
        self.results.len().div_ceil(self.per_page)
    }

    fn page_items(&self, page: usize) -> &[usize] {
        let start = ((page.max(1) - 1) * self.per_page).min(self.results.len());
        let end = (start + self.per_page).min(self.results.len());
        &self.results[start..end]
    }

    /// Whether the page has a search box.
    pub fn has_search_box(&self) -> bool {
        self.page == Page::Search
    }

    /// The clickable strings of the current page, lower-cased (what `click[...]` accepts).
    pub fn clickables(&self, cat: &Catalogue) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        match &self.page {
            Page::Search | Page::Done { .. } => {}
            Page::Results { page } => {
                out.push("back to search".into());
                if *page > 1 {
                    out.push("< prev".into());
                }
                if *page < self.page_count() {
                    out.push("next >".into());
                }
                for &p in self.page_items(*page) {
                    out.push(cat.products[p].asin.to_lowercase());
                }
            }
            Page::Item { product } => {
                out.push("back to search".into());
                out.push("< prev".into());
                for (_, values) in &cat.products[*product].options {
                    for v in values {
                        let v = v.to_lowercase();
                        if !out.contains(&v) {
                            out.push(v);
                        }
                    }
                }
                for s in ["description", "features", "reviews", "buy now"] {
                    out.push(s.into());
                }
            }
            Page::Sub { .. } => {
                out.push("back to search".into());
                out.push("< prev".into());
            }
        }
        out
    }

    /// Applies an action. `None` when it is not allowed here (the session is unchanged).
    pub fn apply(&mut self, action: &ShopAction, cat: &Catalogue) -> Option<Outcome> {
        match action {
            ShopAction::Search(q) => {
                if !self.has_search_box() {
                    return None;
                }
                self.query = q.clone();
                self.results = cat.search(q, self.top_k);
                self.results_page = 1;
                self.page = Page::Results { page: 1 };
                Some(Outcome::Moved)
            }
            ShopAction::Click(target) => {
                if !self.clickables(cat).iter().any(|c| c == target) {
                    return None;
                }
                self.click(target, cat)
            }
        }
    }

    fn click(&mut self, target: &str, cat: &Catalogue) -> Option<Outcome> {
        if target == "back to search" {
            self.page = Page::Search;
            self.chosen.clear();
            return Some(Outcome::Moved);
        }
        match self.page.clone() {
            Page::Results { page } => {
                if target == "next >" {
                    self.page = Page::Results { page: page + 1 };
                } else if target == "< prev" {
                    self.page = Page::Results { page: page - 1 };
                } else {
                    let product = *self
                        .page_items(page)
                        .iter()
                        .find(|&&p| cat.products[p].asin.eq_ignore_ascii_case(target))?;
                    self.results_page = page;
                    self.chosen.clear();
                    self.page = Page::Item { product };
                }
            }
            Page::Item { product } => match target {
                "< prev" => {
                    self.chosen.clear();
                    self.page = Page::Results {
                        page: self.results_page,
                    };
                }
                "description" | "features" | "reviews" => {
                    let kind = match target {
                        "description" => SubPage::Description,
                        "features" => SubPage::Features,
                        _ => SubPage::Reviews,
                    };
                    self.page = Page::Sub { product, kind };
                }
                "buy now" => {
                    self.page = Page::Done { product };
                    return Some(Outcome::Bought {
                        product,
                        options: self.chosen.clone(),
                    });
                }
                value => {
                    // An option value: select it for the first option name that offers it.
                    let (name, v) = cat.products[product].options.iter().find_map(|(n, vs)| {
                        vs.iter()
                            .find(|v| v.to_lowercase() == value)
                            .map(|v| (n.clone(), v.clone()))
                    })?;
                    match self.chosen.iter_mut().find(|(n, _)| *n == name) {
                        Some(slot) => slot.1 = v,
                        None => self.chosen.push((name, v)),
                    }
                }
            },
            Page::Sub { product, .. } => {
                // The only other clickable on a sub-page is `< prev`: back to the item.
                self.page = Page::Item { product };
            }
            Page::Search | Page::Done { .. } => return None,
        }
        Some(Outcome::Moved)
    }

    /// The page as text: visible strings joined with ` [SEP] `.
    pub fn render(&self, cat: &Catalogue, instruction: &str, score: Option<f64>) -> String {
        let mut parts: Vec<String> = Vec::new();
        if self.page == Page::Search {
            parts.push("WebShop".into());
        }
        parts.push("Instruction:".into());
        parts.push(instruction.to_string());
        match &self.page {
            Page::Search => parts.push("Search".into()),
            Page::Results { page } => {
                parts.push("Back to Search".into());
                parts.push(format!(
                    "Page {page} (Total results: {})",
                    self.results.len()
                ));
                if *page > 1 {
                    parts.push("< Prev".into());
                }
                if *page < self.page_count() {
                    parts.push("Next >".into());
                }
                for &p in self.page_items(*page) {
                    let prod = &cat.products[p];
                    parts.push(prod.asin.clone());
                    parts.push(prod.title.clone());
                    parts.push(prod.price_text.clone());
                }
            }
            Page::Item { product } => {
                let prod = &cat.products[*product];
                parts.push("Back to Search".into());
                parts.push("< Prev".into());
                for (name, values) in &prod.options {
                    parts.push(name.clone());
                    parts.extend(values.iter().cloned());
                }
                if !self.chosen.is_empty() {
                    let sel: Vec<String> = self
                        .chosen
                        .iter()
                        .map(|(n, v)| format!("{n}: {v}"))
                        .collect();
                    parts.push(format!("Selected: {}", sel.join(", ")));
                }
                parts.push(prod.title.clone());
                parts.push(format!("Price: {}", prod.price_text));
                parts.push(format!("Rating: {}", prod.rating));
                for s in ["Description", "Features", "Reviews", "Buy Now"] {
                    parts.push(s.into());
                }
            }
            Page::Sub { product, kind } => {
                let prod = &cat.products[*product];
                parts.push("Back to Search".into());
                parts.push("< Prev".into());
                match kind {
                    SubPage::Description => parts.push(prod.description.trim().to_string()),
                    SubPage::Features => parts.extend(
                        prod.bullet_points
                            .iter()
                            .map(|b| b.trim().to_string())
                            .filter(|b| !b.is_empty()),
                    ),
                    SubPage::Reviews => parts.push("No reviews yet.".into()),
                }
            }
            Page::Done { product } => {
                let prod = &cat.products[*product];
                parts.clear();
                parts.push("Thank you for shopping with us!".into());
                parts.push("Purchased".into());
                parts.push(prod.asin.clone());
                parts.push(prod.title.clone());
                if let Some(s) = score {
                    parts.push("Your score (min 0.0, max 1.0)".into());
                    parts.push(format!("{s:.4}"));
                }
            }
        }
        parts.retain(|p| !p.is_empty());
        parts.join(SEP)
    }
}
