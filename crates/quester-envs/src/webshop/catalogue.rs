//! The 1000-product catalogue, embedded gzip-compressed in the binary and parsed once per
//! process ([`Catalogue::shared`]); every env instance shares it through an `Arc`.

use super::bm25::Bm25Index;
use super::goals::{self, Goal};
use super::pyrandom::PyRandom;
use flate2::read::GzDecoder;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, OnceLock};

static PRODUCTS_GZ: &[u8] = include_bytes!("../../../../data/webshop/products_1k.json.gz");
static INSTRUCTIONS_GZ: &[u8] = include_bytes!("../../../../data/webshop/instructions_1k.json.gz");

/// Upstream's `goal.py` seeds Python's global RNG with 42 at import; the price draws for products
/// with a price range and then the goal price bounds come from that stream, in catalogue order.
pub const PRICE_SEED: u64 = 42;

/// Why the catalogue could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error("cannot decompress {file}: {source}")]
    Gzip {
        file: &'static str,
        source: std::io::Error,
    },
    #[error("{file} is not the expected JSON: {source}")]
    Json {
        file: &'static str,
        source: serde_json::Error,
    },
    #[error("products file lists ASIN {0} twice")]
    DuplicateAsin(String),
}

/// One product, with the fields the pages and the reward use.
#[derive(Debug, Clone)]
pub struct Product {
    /// ASIN, upper case as in the data (`B06Y3VLDFB`).
    pub asin: String,
    /// The lower-cased text that search indexes.
    pub contents: String,
    pub title: String,
    pub description: String,
    pub bullet_points: Vec<String>,
    /// The price as shown (`$17.99` or `$17.99 to $19.99`).
    pub price_text: String,
    /// The price the reward compares with the goal's bound (a range is drawn once, see
    /// [`PRICE_SEED`]).
    pub price: f64,
    /// Option name -> values, in the order of the data file.
    pub options: Vec<(String, Vec<String>)>,
    pub attributes: Vec<String>,
    pub category: String,
    /// The search query the product was scraped for (the reward's "query match").
    pub query: String,
    /// `A › B › C` breadcrumb.
    pub product_category: String,
    pub name: String,
    pub rating: String,
    /// The synthetic instruction, for the 415 products that have one.
    pub instruction: Option<String>,
    pub instruction_attributes: Vec<String>,
}

#[derive(Deserialize)]
struct RawEntry {
    id: String,
    #[serde(default)]
    contents: String,
    product: RawProduct,
}

#[derive(Deserialize)]
struct RawProduct {
    #[serde(rename = "Title", default)]
    title: String,
    #[serde(rename = "Description", default)]
    description: String,
    #[serde(rename = "BulletPoints", default)]
    bullet_points: Vec<String>,
    #[serde(rename = "Price", default)]
    price: String,
    #[serde(default)]
    pricing: Vec<f64>,
    #[serde(default, deserialize_with = "ordered_options")]
    options: Vec<(String, Vec<String>)>,
    #[serde(rename = "Attributes", default)]
    attributes: Vec<String>,
    #[serde(default)]
    category: String,
    #[serde(default)]
    query: String,
    #[serde(default)]
    product_category: String,
    #[serde(default)]
    name: String,
    #[serde(rename = "Rating", default)]
    rating: serde_json::Value,
}

#[derive(Deserialize, Default)]
struct RawInstruction {
    #[serde(default)]
    instruction: Option<String>,
    #[serde(default)]
    instruction_attributes: Vec<String>,
}

/// Reads a JSON object of lists keeping the key order (serde_json's map would sort it).
fn ordered_options<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, Vec<String>)>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<(String, Vec<String>)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of option name -> list of values")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some((k, v)) = map.next_entry::<String, Vec<String>>()? {
                out.push((k, v));
            }
            Ok(out)
        }
    }
    d.deserialize_map(V)
}

fn gunzip(file: &'static str, bytes: &[u8]) -> Result<Vec<u8>, CatalogueError> {
    let mut out = Vec::new();
    GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|source| CatalogueError::Gzip { file, source })?;
    Ok(out)
}

/// Products, their search index and the shuffled synthetic goals.
pub struct Catalogue {
    pub products: Vec<Product>,
    by_asin: HashMap<String, usize>,
    pub index: Bm25Index,
    /// All synthetic goals in upstream's shuffled order (test = first 500, train = the rest).
    pub goals: Vec<Goal>,
}

impl Catalogue {
    /// The embedded catalogue, parsed on first use and shared afterwards.
    pub fn shared() -> Result<Arc<Catalogue>, String> {
        static SHARED: OnceLock<Result<Arc<Catalogue>, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                Catalogue::load_embedded()
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }

    /// Parses the embedded catalogue afresh (uncached; [`Catalogue::shared`] is the cached one).
    pub fn load_embedded() -> Result<Catalogue, CatalogueError> {
        Catalogue::from_gzip(PRODUCTS_GZ, INSTRUCTIONS_GZ)
    }

    /// Parses gzip-compressed products and instructions files.
    pub fn from_gzip(products: &[u8], instructions: &[u8]) -> Result<Catalogue, CatalogueError> {
        let p = gunzip("products_1k.json.gz", products)?;
        let i = gunzip("instructions_1k.json.gz", instructions)?;
        Catalogue::from_json(&p, &i)
    }

    /// Parses the products list and the instructions object (plain JSON).
    pub fn from_json(products: &[u8], instructions: &[u8]) -> Result<Catalogue, CatalogueError> {
        let raw: Vec<RawEntry> =
            serde_json::from_slice(products).map_err(|source| CatalogueError::Json {
                file: "products_1k.json",
                source,
            })?;
        let mut ins: HashMap<String, RawInstruction> = serde_json::from_slice(instructions)
            .map_err(|source| CatalogueError::Json {
                file: "instructions_1k.json",
                source,
            })?;
        let mut rng = PyRandom::new(PRICE_SEED);
        let mut products = Vec::with_capacity(raw.len());
        let mut by_asin = HashMap::new();
        for e in raw {
            if by_asin.insert(e.id.clone(), products.len()).is_some() {
                return Err(CatalogueError::DuplicateAsin(e.id));
            }
            let p = e.product;
            // Upstream: one price -> that price; a range -> uniform draw inside it; none -> 100.
            let price = match p.pricing.as_slice() {
                [] => 100.0,
                [x] => *x,
                [lo, hi, ..] => rng.uniform(*lo, *hi),
            };
            let instr = ins.remove(&e.id).unwrap_or_default();
            products.push(Product {
                asin: e.id,
                contents: e.contents,
                title: p.title,
                description: p.description,
                bullet_points: p.bullet_points,
                price_text: p.price,
                price,
                options: p.options,
                attributes: p.attributes,
                category: p.category,
                query: p.query.trim().to_lowercase(),
                product_category: p.product_category,
                name: p.name,
                rating: match p.rating {
                    serde_json::Value::String(s) => s,
                    serde_json::Value::Null => "N.A.".to_string(),
                    v => v.to_string(),
                },
                instruction: instr.instruction,
                instruction_attributes: instr.instruction_attributes,
            });
        }
        let index = Bm25Index::build(
            &products
                .iter()
                .map(|p| p.contents.as_str())
                .collect::<Vec<_>>(),
        );
        let mut goals = goals::synthetic_goals(&products, &mut rng);
        goals::shuffle_like_upstream(&mut goals);
        Ok(Catalogue {
            products,
            by_asin,
            index,
            goals,
        })
    }

    /// The product with this ASIN (case-insensitive).
    pub fn product_index(&self, asin: &str) -> Option<usize> {
        self.by_asin
            .get(asin)
            .or_else(|| self.by_asin.get(&asin.to_uppercase()))
            .copied()
    }

    /// Search: up to `k` product indices, best first.
    pub fn search(&self, query: &str, k: usize) -> Vec<usize> {
        self.index
            .search(query, k)
            .into_iter()
            .map(|(d, _)| d)
            .collect()
    }
}
