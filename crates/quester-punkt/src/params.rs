//! Punkt's trained parameters (NLTK's `PunktParameters`), read from NLTK's `punkt_tab` files.

use std::collections::{HashMap, HashSet};

/// Orthographic context flags (NLTK's `_ORTHO_*`): where a word type was seen in training,
/// and with which case of its first letter.
pub(crate) const ORTHO_BEG_UC: u32 = 1 << 1;
pub(crate) const ORTHO_MID_UC: u32 = 1 << 2;
pub(crate) const ORTHO_UNK_UC: u32 = 1 << 3;
pub(crate) const ORTHO_BEG_LC: u32 = 1 << 4;
pub(crate) const ORTHO_MID_LC: u32 = 1 << 5;
pub(crate) const ORTHO_UNK_LC: u32 = 1 << 6;
pub(crate) const ORTHO_UC: u32 = ORTHO_BEG_UC | ORTHO_MID_UC | ORTHO_UNK_UC;
pub(crate) const ORTHO_LC: u32 = ORTHO_BEG_LC | ORTHO_MID_LC | ORTHO_UNK_LC;

/// The four tables of a Punkt model.
#[derive(Debug, Clone, Default)]
pub struct Params {
    /// Known abbreviation types, lower case, without their final period.
    pub(crate) abbrev_types: HashSet<String>,
    /// Word type pairs across a period that is no sentence break (first type -> second types).
    pub(crate) collocations: HashMap<String, HashSet<String>>,
    /// Types that often start a sentence.
    pub(crate) sent_starters: HashSet<String>,
    /// Orthographic context flags of each type.
    pub(crate) ortho_context: HashMap<String, u32>,
}

/// A line of a `punkt_tab` file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamsError {
    /// The file, as named in NLTK's `punkt_tab` directory.
    pub file: &'static str,
    /// 1-based line number.
    pub line: usize,
}

impl std::fmt::Display for ParamsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: line {} is malformed", self.file, self.line)
    }
}

impl std::error::Error for ParamsError {}

/// NLTK's `TabDecoder` reads each line without its final `\n` and splits fields on tabs.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_terminator('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l))
}

impl Params {
    /// Parameters from the contents of the four files of a `punkt_tab` language directory
    /// (`abbrev_types.txt`, `collocations.tab`, `sent_starters.txt`, `ortho_context.tab`).
    pub fn from_punkt_tab(
        abbrev_types: &str,
        collocations: &str,
        sent_starters: &str,
        ortho_context: &str,
    ) -> Result<Params, ParamsError> {
        let mut params = Params {
            abbrev_types: lines(abbrev_types).map(|(_, l)| l.to_owned()).collect(),
            sent_starters: lines(sent_starters).map(|(_, l)| l.to_owned()).collect(),
            ..Params::default()
        };
        for (n, line) in lines(collocations) {
            let (a, b) = line
                .split_once('\t')
                .filter(|(_, b)| !b.contains('\t'))
                .ok_or(ParamsError {
                    file: "collocations.tab",
                    line: n,
                })?;
            params
                .collocations
                .entry(a.to_owned())
                .or_default()
                .insert(b.to_owned());
        }
        for (n, line) in lines(ortho_context) {
            let err = ParamsError {
                file: "ortho_context.tab",
                line: n,
            };
            let (typ, flags) = line.split_once('\t').ok_or(err.clone())?;
            let flags = flags.trim().parse::<u32>().map_err(|_| err)?;
            params.ortho_context.insert(typ.to_owned(), flags);
        }
        Ok(params)
    }

    /// NLTK's English `punkt_tab` model (see `data/README.md`).
    pub fn english() -> Params {
        Params::from_punkt_tab(
            include_str!("../data/english/abbrev_types.txt"),
            include_str!("../data/english/collocations.tab"),
            include_str!("../data/english/sent_starters.txt"),
            include_str!("../data/english/ortho_context.tab"),
        )
        .expect("the embedded English punkt_tab files are well formed")
    }

    pub(crate) fn is_abbrev(&self, typ: &str) -> bool {
        self.abbrev_types.contains(typ)
    }

    pub(crate) fn is_collocation(&self, first: &str, second: &str) -> bool {
        self.collocations
            .get(first)
            .is_some_and(|seconds| seconds.contains(second))
    }

    pub(crate) fn is_sent_starter(&self, typ: &str) -> bool {
        self.sent_starters.contains(typ)
    }

    /// Flags of a type; an unseen type has none (NLTK's `defaultdict(int)`).
    pub(crate) fn ortho(&self, typ: &str) -> u32 {
        self.ortho_context.get(typ).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_tables_load() {
        let p = Params::english();
        assert_eq!(p.abbrev_types.len(), 156);
        assert_eq!(p.sent_starters.len(), 39);
        assert_eq!(p.collocations.values().map(HashSet::len).sum::<usize>(), 37);
        assert_eq!(p.ortho_context.len(), 20366);
        assert!(p.is_abbrev("u.s") && p.is_abbrev("mr") && !p.is_abbrev("etc"));
        assert!(p.is_collocation("##number##", "credit") && p.is_collocation("j", "walter"));
        assert!(p.is_sent_starter("however"));
        assert_eq!(p.ortho("a"), 126);
        assert_eq!(p.ortho("no-such-type"), 0);
    }

    #[test]
    fn malformed_lines_are_reported() {
        let err = Params::from_punkt_tab("", "a\tb\nc\n", "", "").unwrap_err();
        assert_eq!((err.file, err.line), ("collocations.tab", 2));
        let err = Params::from_punkt_tab("", "", "", "a\t1\nb\tx\n").unwrap_err();
        assert_eq!((err.file, err.line), ("ortho_context.tab", 2));
    }
}
