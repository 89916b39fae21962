//! Ranking by meaning beside the words: an embedding model reorders what the words found.
//!
//! Words alone miss a question asked in other words than the entry's ("what do we do when a
//! post blows up with angry comments" for 危機處理流程). A multilingual embedding model places
//! a question and the entry that answers it close together whatever their words. It does not
//! find entries of its own: it reorders the [`POOL`] best the words found, each entry ranked
//! twice, by its words and by its vector's similarity to the query's, the two ranks fused
//! ([`fuse`], reciprocal rank fusion). So every result still has a word of the query (the
//! dashboard shows which), a query costs one embedding and the pool's vectors, and the words
//! keep what the model is weak at (English asking for Chinese entries, the trade's words).
//!
//! Measured on `tests/data/wiki_quality.json` (docs/benchmarks.md, "Ranking by meaning"): on
//! `dev3`, 110 queries written apart from both, words alone put the right entry in the first
//! three for 87.3%, the fusion for 95.5%; the rule and its two numbers ([`RRF_K`],
//! [`MODEL_WEIGHT`]) were chosen on the tuning sets before `dev3` was read.
//!
//! An entry's vector is made in the background from its [`passage`], and is the entry's for
//! the version and the model that made it ([`Embedded`]); until then the entry keeps its
//! place by words in both rankings.

use fleetdesk_kernel::BoxFuture;

/// How many of the best entries by words are reordered (the largest page, so a page of any
/// size is the best of the same pool).
pub const POOL: i64 = 30;

/// Reciprocal rank fusion's constant: an entry at rank `r` (from 1) gains `1 / (RRF_K + r)`
/// from its words and [`MODEL_WEIGHT`] times that from its meaning. Small, so the first
/// places weigh much more than the tail.
pub const RRF_K: f64 = 1.0;

/// How much the model's rank weighs beside the words' (1): the words lead, the model breaks
/// their near-ties and lifts the entry that answers a question asked in other words.
pub const MODEL_WEIGHT: f64 = 0.5;

/// The most characters of an entry that are embedded: its title, summary and tags, then its
/// body up to this (a model window is 512 tokens; an entry's opening says what it is about).
pub const PASSAGE_CHARS: usize = 1_200;

/// The most passages sent to the model at once.
pub const BATCH: usize = 16;

/// A text's meaning as the model gives it: the unit vector's components times 127, rounded
/// (a byte each; ranking by it is ranking by the cosine of the floats, to within rounding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Embedding(Vec<i8>);

impl Embedding {
    /// The vector `v` (any length but zero), normalized and quantized; `None` when it is empty,
    /// all zeros or not finite.
    pub fn from_floats(v: &[f32]) -> Option<Embedding> {
        let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        if v.is_empty() || !norm.is_finite() || norm == 0.0 {
            return None;
        }
        Some(Embedding(
            v.iter()
                .map(|x| (f64::from(*x) / norm * 127.0).round().clamp(-127.0, 127.0) as i8)
                .collect(),
        ))
    }

    /// As stored: one byte per component.
    pub fn from_bytes(bytes: &[u8]) -> Embedding {
        Embedding(bytes.iter().map(|b| *b as i8).collect())
    }

    /// One byte per component.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.iter().map(|c| *c as u8).collect()
    }

    /// How many components.
    pub fn dimensions(&self) -> usize {
        self.0.len()
    }

    /// The dot product of the two (127² for the same direction); `None` when their lengths
    /// differ (two models).
    pub fn similarity(&self, other: &Embedding) -> Option<i32> {
        (self.0.len() == other.0.len()).then(|| {
            self.0
                .iter()
                .zip(&other.0)
                .map(|(a, b)| i32::from(*a) * i32::from(*b))
                .sum()
        })
    }
}

/// What is embedded of an entry: its title, summary and tags on a line each, then its body, at
/// most [`PASSAGE_CHARS`] characters in all (cut at a character).
pub fn passage(title: &str, summary: &str, tags: &[String], body: &str) -> String {
    let mut text = format!("{title}\n{summary}\n{}\n{body}", tags.join(" "));
    if let Some((cut, _)) = text.char_indices().nth(PASSAGE_CHARS) {
        text.truncate(cut);
    }
    text
}

/// An entry's vector and what it was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Embedded {
    /// The entry's version the vector was made from.
    pub version: i32,
    /// The model that made it ([`Embedder::model`]).
    pub model: String,
    pub embedding: Embedding,
}

/// `found`, best first by words, reordered by words and meaning: each gains `1 / (RRF_K +
/// rank)` from its place by words and [`MODEL_WEIGHT`] times that from its place by similarity
/// to `query` among those with a vector; one without (not embedded yet, or by another model)
/// takes its place by words there too. Ties keep the words' order. Returns each with its fused
/// score, best first.
pub fn fuse<T>(
    found: Vec<T>,
    query: &Embedding,
    vector: impl Fn(&T) -> Option<&Embedding>,
) -> Vec<(T, f64)> {
    let similar: Vec<Option<i32>> = found
        .iter()
        .map(|f| vector(f).and_then(|v| v.similarity(query)))
        .collect();
    let mut by_meaning: Vec<usize> = (0..found.len()).filter(|i| similar[*i].is_some()).collect();
    by_meaning.sort_by_key(|i| (std::cmp::Reverse(similar[*i]), *i));
    let mut meaning_rank: Vec<usize> = (0..found.len()).collect();
    for (rank, i) in by_meaning.iter().enumerate() {
        meaning_rank[*i] = rank;
    }
    let gain = |rank: usize| 1.0 / (RRF_K + rank as f64 + 1.0);
    let mut scored: Vec<(usize, f64, T)> = found
        .into_iter()
        .enumerate()
        .map(|(i, f)| (i, gain(i) + MODEL_WEIGHT * gain(meaning_rank[i]), f))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().map(|(_, s, f)| (f, s)).collect()
}

/// How many entries to ask storage for, for a page of `limit`: the [`POOL`] (or the page, when
/// larger) with a model, else the page.
pub fn asked(limit: i64, with_model: bool) -> i64 {
    if with_model { limit.max(POOL) } else { limit }
}

/// The page of `limit` of `found` (best first by words): reordered by [`fuse`] when there is a
/// `query` vector, each with its fused score; else as it is, without one.
pub fn page<T>(
    found: Vec<T>,
    query: Option<&Embedding>,
    vector: impl Fn(&T) -> Option<&Embedding>,
    limit: i64,
) -> Vec<(T, Option<f64>)> {
    let limit = usize::try_from(limit).unwrap_or(0);
    match query {
        Some(q) => fuse(found, q, vector)
            .into_iter()
            .take(limit)
            .map(|(f, s)| (f, Some(s)))
            .collect(),
        None => found.into_iter().take(limit).map(|f| (f, None)).collect(),
    }
}

/// An embedding model: queries and passages in, vectors out.
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// The model's name, stored beside each vector: vectors another model made are made again.
    fn model(&self) -> &str;

    /// The vector of a search query.
    fn query<'a>(&'a self, text: &'a str) -> BoxFuture<'a, anyhow::Result<Embedding>>;

    /// The vectors of passages (at most [`BATCH`]), in their order.
    fn passages<'a>(&'a self, texts: &'a [String])
    -> BoxFuture<'a, anyhow::Result<Vec<Embedding>>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(v: &[f32]) -> Embedding {
        Embedding::from_floats(v).expect("a vector")
    }

    #[test]
    fn a_vector_is_normalized_and_quantized_to_a_byte_per_component() {
        let v = e(&[3.0, 4.0, 0.0]);
        assert_eq!(v, Embedding(vec![76, 102, 0]));
        assert_eq!(Embedding::from_bytes(&v.to_bytes()), v);
        assert_eq!(v.dimensions(), 3);
        assert_eq!(e(&[-1.0, 0.0]), Embedding(vec![-127, 0]));
        assert_eq!(Embedding::from_floats(&[]), None);
        assert_eq!(Embedding::from_floats(&[0.0, 0.0]), None);
        assert_eq!(Embedding::from_floats(&[f32::NAN, 1.0]), None);
        assert_eq!(Embedding::from_floats(&[f32::INFINITY, 1.0]), None);
    }

    #[test]
    fn similarity_is_the_dot_product_and_refuses_another_length() {
        let a = e(&[1.0, 0.0]);
        assert_eq!(a.similarity(&a), Some(127 * 127));
        assert_eq!(a.similarity(&e(&[0.0, 1.0])), Some(0));
        assert_eq!(a.similarity(&e(&[-1.0, 0.0])), Some(-127 * 127));
        assert_eq!(a.similarity(&e(&[1.0, 0.0, 0.0])), None);
    }

    #[test]
    fn a_passage_is_title_summary_tags_and_body_cut_at_a_character() {
        let p = passage("T", "S", &["a".into(), "b".into()], "body");
        assert_eq!(p, "T\nS\na b\nbody");
        let long = "貓".repeat(PASSAGE_CHARS * 2);
        let p = passage("T", "S", &[], &long);
        assert_eq!(p.chars().count(), PASSAGE_CHARS);
        assert!(p.starts_with("T\nS\n\n貓"));
        // At the limit nothing is cut; one past it, one character is.
        let exact = "x".repeat(PASSAGE_CHARS - 5);
        assert_eq!(
            passage("T", "S", &[], &exact).chars().count(),
            PASSAGE_CHARS
        );
        assert!(passage("T", "S", &[], &exact).ends_with('x'));
        let over = "x".repeat(PASSAGE_CHARS - 4);
        assert_eq!(passage("T", "S", &[], &over).chars().count(), PASSAGE_CHARS);
    }

    /// Found by words in the order given, each with its vector (or none).
    fn order(found: &[(&'static str, Option<Embedding>)], query: &Embedding) -> Vec<&'static str> {
        fuse(found.to_vec(), query, |f| f.1.as_ref())
            .into_iter()
            .map(|(f, _)| f.0)
            .collect()
    }

    #[test]
    fn the_model_lifts_the_closest_entry_into_the_first_places_but_the_words_lead() {
        let q = e(&[1.0, 0.0]);
        let far = Some(e(&[0.0, 1.0]));
        let near = Some(e(&[1.0, 0.1]));
        let pool = |n: usize| -> Vec<_> {
            ["a", "b", "c", "d", "e", "f"][..n]
                .iter()
                .map(|name| (*name, far.clone()))
                .chain([("z", near.clone())])
                .collect()
        };
        // Fourth by words, first by meaning: 1/5 + 0.5/2 beats the third's 1/4 + 0.5/5.
        assert_eq!(order(&pool(3), &q), ["a", "b", "z", "c"]);
        // Second by words and first by meaning is not enough to pass the first by words
        // (1/3 + 0.5/2 < 1/2 + 0.5/3).
        assert_eq!(order(&pool(1), &q), ["a", "z"]);
        // Seventh by words: 1/8 + 0.5/2 beats the third's 1/4 + 0.5/5, not the second's
        // 1/3 + 0.5/4.
        assert_eq!(order(&pool(6), &q)[..4], ["a", "b", "z", "c"]);
    }

    #[test]
    fn the_fused_scores_are_best_first_and_ties_keep_the_words_order() {
        let q = e(&[1.0, 0.0]);
        let same = Some(e(&[1.0, 1.0]));
        let fused = fuse(
            vec![("a", same.clone()), ("b", same.clone()), ("c", same)],
            &q,
            |f| f.1.as_ref(),
        );
        let names: Vec<_> = fused.iter().map(|(f, _)| f.0).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(fused.windows(2).all(|w| w[0].1 >= w[1].1));
        assert_eq!(fused[0].1, 1.0 / 2.0 + MODEL_WEIGHT / 2.0);
    }

    #[test]
    fn a_page_is_reordered_only_with_a_query_vector_and_cut_at_its_limit() {
        assert_eq!((asked(8, true), asked(8, false)), (POOL, 8));
        assert_eq!(asked(POOL + 1, true), POOL + 1);
        let q = e(&[1.0, 0.0]);
        let found = vec![
            ("a", Some(e(&[0.0, 1.0]))),
            ("b", Some(e(&[0.0, 1.0]))),
            ("c", Some(e(&[0.0, 1.0]))),
            ("z", Some(e(&[1.0, 0.0]))),
        ];
        type Named = (&'static str, Option<Embedding>);
        fn names(p: Vec<(Named, Option<f64>)>) -> Vec<&'static str> {
            p.into_iter().map(|(f, _)| f.0).collect()
        }
        let fused = page(found.clone(), Some(&q), |f| f.1.as_ref(), 3);
        assert!(fused.iter().all(|(_, s)| s.is_some()));
        assert_eq!(names(fused), ["a", "b", "z"]);
        let kept = page(found, None, |f| f.1.as_ref(), 3);
        assert!(kept.iter().all(|(_, s)| s.is_none()));
        assert_eq!(names(kept), ["a", "b", "c"]);
    }

    #[test]
    fn an_entry_without_a_vector_keeps_its_place_by_words_in_both_rankings() {
        let q = e(&[1.0, 0.0]);
        let near = Some(e(&[1.0, 0.0]));
        let other_model = Some(e(&[1.0, 0.0, 0.0]));
        // "a" has no vector: rank 1 by words, and rank 1 by meaning too.
        let got = order(&[("a", None), ("b", near), ("c", other_model)], &q);
        assert_eq!(got, ["a", "b", "c"]);
        // Without any vector the words' order stands.
        assert_eq!(order(&[("a", None), ("b", None)], &q), ["a", "b"]);
        assert!(order(&[], &q).is_empty());
    }
}
