//! A search query, planned: its words, what else finds each (the English of a Chinese word,
//! the mainland wording of a Taiwan one, the synonyms a glossary declares), how much each
//! weighs and which entries are ranked.
//!
//! Storage answers two counts ([`Counts`]) and ranks by the [`Plan`]: an entry's score is the
//! sum, over the query's words it has, of the word's weight ([`weight`], the rarer among the
//! entries searched the heavier, as BM25 weighs) times `ts_rank` of that word alone (where it
//! is: title, summary and tags, or body, and how often; the better of its own term and its
//! other names, so a word counts once however it is found). So the words of a long question that
//! any entry has (post, 貼文) weigh little beside the one word that names its topic.
//!
//! At most [`CANDIDATES`] entries are taken in each of two passes, ranked at once by `ts_rank`
//! of all the words, and the best [`RERANKED`] scored word by word, so a query that matches
//! most entries costs what a narrow one does: first the entries that have every word (any way
//! of it); when those are fewer than the page, the entries that have any of the rarest words,
//! taken rarest first while together they are in at most [`CANDIDATES`] entries (at least the
//! rarest word, whatever its count). Words so common that they alone would exceed the bound
//! still weigh in the score of every entry ranked; they only do not bring entries in.

use crate::aliases::{self, AliasGroup};
use crate::ports::SearchFacts;
use crate::search::{self, Span};

/// How many entries a pass takes at most; also where counting stops: a word in more entries
/// than this is as common as any.
pub const CANDIDATES: i64 = 1_000;

/// How many of the candidates, the best by `ts_rank` of all the words at once, are scored word
/// by word (more than the largest page, 30).
pub const RERANKED: i64 = 64;

/// One word of a query and what else finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryWord {
    /// The term (as [`search::terms`] gives it).
    pub term: String,
    /// The word as the query wrote it (for showing which words matched).
    pub shown: String,
    /// The other names that find it, each as its terms (all of them): the English of a
    /// Chinese word ([`search::pivot`]), its mainland wording, declared synonyms.
    pub also: Vec<Vec<String>>,
}

impl QueryWord {
    /// The word's `to_tsquery('simple', …)` text: the term or any of its other names (a name
    /// of several terms needs all of them). Terms hold letters and digits only.
    pub fn ts_query(&self) -> String {
        std::iter::once(format!("'{}'", self.term))
            .chain(self.other_names())
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// The tsquery of the word's other names alone, with how many distinct terms it holds;
    /// none when it has no other name.
    pub fn others_query(&self) -> Option<(String, usize)> {
        let mut terms: Vec<&String> = self.also.iter().flatten().collect();
        terms.sort_unstable();
        terms.dedup();
        (!self.also.is_empty()).then(|| {
            (
                self.other_names().collect::<Vec<_>>().join(" | "),
                terms.len(),
            )
        })
    }

    fn other_names(&self) -> impl Iterator<Item = String> + '_ {
        self.also.iter().map(|name| match name.as_slice() {
            [one] => format!("'{one}'"),
            _ => format!(
                "({})",
                name.iter()
                    .map(|t| format!("'{t}'"))
                    .collect::<Vec<_>>()
                    .join(" & ")
            ),
        })
    }

    /// Whether `term` is the word or one of its one-term names.
    fn has(&self, term: &str) -> bool {
        self.term == term || self.also.iter().any(|n| n.len() == 1 && n[0] == term)
    }
}

/// The words of `query`, each once, in order, with the other names the query itself gives
/// them (English of Chinese words, mainland wording); none when it has no term.
pub fn words(query: &str) -> Vec<QueryWord> {
    let folded = search::fold(query);
    let original: Vec<char> = query.chars().collect();
    // Folding keeps each character's place but for rare phrase conversions: then the word
    // is shown as its term.
    let aligned = folded.chars().count() == original.len();
    let shown = |s: &Span| -> String {
        if aligned {
            original[s.start..s.end].iter().collect()
        } else {
            s.term.clone()
        }
    };
    let mut words: Vec<QueryWord> = Vec::new();
    let mut places: Vec<(usize, usize)> = Vec::new();
    for s in search::spans(&folded) {
        if words.iter().any(|w| w.term == s.term) {
            continue;
        }
        places.push((s.start, s.end));
        words.push(QueryWord {
            shown: shown(&s),
            term: s.term,
            also: Vec::new(),
        });
    }
    if let Some(mainland) = search::mainland(query, &folded) {
        let same_places = mainland.chars().count() == folded.chars().count();
        for s in search::spans(&mainland) {
            if words.iter().any(|w| w.has(&s.term)) {
                continue;
            }
            let host = places
                .iter()
                .position(|&(a, b)| a < s.end && s.start < b)
                .filter(|_| same_places);
            match host {
                Some(i) => words[i].also.push(vec![s.term]),
                None => {
                    places.push((s.start, s.end));
                    words.push(QueryWord {
                        shown: s.term.clone(),
                        term: s.term,
                        also: Vec::new(),
                    });
                }
            }
        }
    }
    let terms: Vec<String> = words.iter().map(|w| w.term.clone()).collect();
    for (i, stems) in search::pivots(&terms) {
        for stem in stems {
            if !words.iter().any(|w| w.has(&stem)) {
                words[i].also.push(vec![stem]);
            }
        }
    }
    words
}

/// Every term of the words and of their other names, each once: what synonyms are looked up
/// by and what a snippet looks for.
pub fn all_terms(words: &[QueryWord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words {
        for t in std::iter::once(&w.term).chain(w.also.iter().flatten()) {
            if !out.contains(t) {
                out.push(t.clone());
            }
        }
    }
    out
}

/// Adds the synonyms of `groups` (those storage found sharing a term with the query): for a
/// group one of whose names the query has (every term of it, as a word or one-term name),
/// the group's other names find the word that name begins with.
pub fn add_synonyms(words: &mut [QueryWord], groups: &[AliasGroup]) {
    for g in groups {
        let Some(had) =
            g.0.iter()
                .find(|name| name.iter().all(|t| words.iter().any(|w| w.has(t))))
        else {
            continue;
        };
        let Some(host) = words.iter().position(|w| w.has(&had[0])) else {
            continue;
        };
        for name in g.0.iter().filter(|n| *n != had) {
            let word = &mut words[host];
            let known = word.also.contains(name) || (name.len() == 1 && word.term == name[0]);
            if !known {
                word.also.push(name.clone());
            }
        }
    }
}

/// What a search asks storage for its facts: the terms synonyms are looked up by
/// ([`all_terms`]) and each word's tsquery ([`QueryWord::ts_query`]) to count.
pub fn asking(words: &[QueryWord]) -> (Vec<String>, Vec<String>) {
    (
        all_terms(words),
        words.iter().map(QueryWord::ts_query).collect(),
    )
}

/// The plan of `words` by the facts storage answered for them: their synonyms join the words
/// ([`add_synonyms`]), then [`plan`]. Both searches of the knowledge base (the agents' and
/// people's, and the community assistant's) run this between the two questions to storage.
pub fn plan_by(words: &mut [QueryWord], facts: &SearchFacts) -> Plan {
    let groups: Vec<AliasGroup> = facts.synonyms.iter().map(|g| aliases::decode(g)).collect();
    add_synonyms(words, &groups);
    plan(words, &facts.counts)
}

/// What storage counts before a search is ranked, each up to [`CANDIDATES`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Counts {
    /// The entries the search sees.
    pub entries: i64,
    /// For each word, in order, the entries that have it (any way of it).
    pub having: Vec<i64>,
}

/// How storage ranks a query (see the module's text).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Each word's tsquery ([`QueryWord::ts_query`]), in order: what the passes look for and
    /// what says whether an entry has the word.
    pub words: Vec<String>,
    /// Each word's [`weight`], in the same order.
    pub weights: Vec<f32>,
    /// Each word's own term as a tsquery, in the same order.
    pub own: Vec<String>,
    /// Each word's other names as a tsquery ([`QueryWord::others_query`]; empty for none),
    /// and what its `ts_rank` is multiplied by: its number of terms, as `ts_rank` divides the
    /// rank of a query of alternatives by their number. A word scores the better of its own
    /// term's rank and its other names': found however, it counts once, so an entry that has
    /// the word and its English does not outrank one that has only the English.
    pub others: Vec<String>,
    pub others_scale: Vec<f32>,
    /// The first pass: entries that have every word found anywhere (all of them when none is).
    pub every: String,
    /// The second pass, when the first finds fewer than the page: entries that have any of
    /// the rarest words.
    pub some: String,
    /// Every word, any way: what the candidates are first ranked by, all at once, to keep
    /// the best [`RERANKED`].
    pub any: String,
}

/// How much a word weighs: BM25's inverse document frequency, `ln(1 + (N - n + 0.5) / (n +
/// 0.5))` for a word in `n` of the `N` entries searched (both counted up to [`CANDIDATES`]).
pub fn weight(having: i64, entries: i64) -> f32 {
    let n = having.max(0) as f64;
    let all = entries.max(having).max(0) as f64;
    (1.0 + (all - n + 0.5) / (n + 0.5)).ln() as f32
}

/// The plan of `words` (none empty) by `counts` (one count a word).
pub fn plan(words: &[QueryWord], counts: &Counts) -> Plan {
    debug_assert_eq!(words.len(), counts.having.len(), "one count a word");
    let queries: Vec<String> = words.iter().map(QueryWord::ts_query).collect();
    let group = |i: &usize| format!("({})", queries[*i]);
    let found: Vec<usize> = (0..words.len()).filter(|&i| counts.having[i] > 0).collect();
    let every_of: Vec<usize> = if found.is_empty() {
        (0..words.len()).collect()
    } else {
        found
    };
    let mut rarest: Vec<usize> = (0..words.len()).collect();
    rarest.sort_by_key(|&i| (counts.having[i], i));
    let mut some_of: Vec<usize> = Vec::new();
    let mut total = 0;
    for i in rarest {
        total += counts.having[i];
        if !some_of.is_empty() && total > CANDIDATES {
            break;
        }
        some_of.push(i);
    }
    let others: Vec<(String, usize)> = words
        .iter()
        .map(|w| w.others_query().unwrap_or_default())
        .collect();
    Plan {
        weights: (0..words.len())
            .map(|i| weight(counts.having[i], counts.entries))
            .collect(),
        own: words.iter().map(|w| format!("'{}'", w.term)).collect(),
        others_scale: others.iter().map(|(_, n)| *n as f32).collect(),
        others: others.into_iter().map(|(q, _)| q).collect(),
        every: every_of.iter().map(group).collect::<Vec<_>>().join(" & "),
        some: some_of.iter().map(group).collect::<Vec<_>>().join(" | "),
        any: (0..words.len())
            .map(|i| group(&i))
            .collect::<Vec<_>>()
            .join(" | "),
        words: queries,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms_of(words: &[QueryWord]) -> Vec<&str> {
        words.iter().map(|w| w.term.as_str()).collect()
    }

    #[test]
    fn a_word_is_shown_as_the_query_wrote_it() {
        let w = words("Replies to 貓咪 飼料");
        assert_eq!(terms_of(&w), ["repli", "猫咪", "饲料"]);
        let shown: Vec<&str> = w.iter().map(|w| w.shown.as_str()).collect();
        assert_eq!(shown, ["Replies", "貓咪", "飼料"]);
        assert!(words("  ？ the ").is_empty());
    }

    #[test]
    fn a_chinese_word_is_also_found_by_its_english() {
        let w = words("饲料");
        assert_eq!(
            w[0].also,
            [vec!["feed".to_owned()], vec!["fodder".to_owned()]]
        );
        assert_eq!(w[0].ts_query(), "'饲料' | 'feed' | 'fodder'");
        // The segmenter splits 玻尿酸 (玻, 尿酸); the dictionary knows the whole word.
        let w = words("玻尿酸");
        assert!(w[0].also.contains(&vec!["hyaluron".to_owned()]), "{w:?}");
        // An English word of the query is not repeated as another's English.
        let w = words("night 夜市");
        assert!(!w[1].also.contains(&vec!["night".to_owned()]), "{w:?}");
    }

    #[test]
    fn taiwan_wording_is_another_way_to_the_same_word() {
        let w = words("影片");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].also.contains(&vec!["视频".to_owned()]), "{w:?}");
    }

    #[test]
    fn a_declared_synonym_finds_the_word_its_other_name_begins_with() {
        let groups = aliases::declared("限動 = 限時動態\nA醇 = 視黃醇");
        let mut w = words("視黃醇 晚上");
        add_synonyms(&mut w, &groups);
        assert!(w[0].also.contains(&vec!["醇".to_owned()]), "{w:?}");
        let mut w = words("限時動態 貼紙");
        add_synonyms(&mut w, &groups);
        let host = w.iter().find(|w| w.term == "限时").unwrap();
        assert!(host.also.contains(&vec!["限动".to_owned()]), "{w:?}");
        assert!(
            w.iter()
                .find(|w| w.term == "贴纸")
                .unwrap()
                .ts_query()
                .starts_with("'贴纸'")
        );
        // A group none of whose names the query has adds nothing.
        let mut w = words("貼紙");
        let before = w.clone();
        add_synonyms(&mut w, &groups);
        assert_eq!(w, before);
    }

    #[test]
    fn a_rare_word_weighs_more_than_a_common_one() {
        assert!(weight(1, 1_000) > weight(10, 1_000));
        assert!(weight(10, 1_000) > weight(900, 1_000));
        assert!(weight(CANDIDATES, CANDIDATES) > 0.0);
        assert!(weight(0, 0) > 0.0);
    }

    #[test]
    fn every_word_first_then_the_rarest_within_the_bound() {
        let w = words("alpha beta gamma");
        let counts = Counts {
            entries: 1_000,
            having: vec![600, 3, 500],
        };
        let p = plan(&w, &counts);
        assert_eq!(p.every, "('alpha') & ('beta') & ('gamma')");
        // beta (3) + gamma (500) stay within 1,000; alpha would pass it.
        assert_eq!(p.some, "('beta') | ('gamma')");
        assert!(p.weights[1] > p.weights[2] && p.weights[2] > p.weights[0]);
        assert_eq!(p.weights[1], weight(3, 1_000));
        assert_eq!(p.own, ["'alpha'", "'beta'", "'gamma'"]);
        assert_eq!(p.any, "('alpha') | ('beta') | ('gamma')");
        assert_eq!((&p.others[0], p.others_scale[0]), (&String::new(), 0.0));
        // A word no entry has does not empty the first pass; the rarest always brings some.
        let p = plan(
            &w,
            &Counts {
                entries: 5_000,
                having: vec![0, 1_000, 1_000],
            },
        );
        assert_eq!(p.every, "('beta') & ('gamma')");
        assert_eq!(p.some, "('alpha') | ('beta')");
        let p = plan(
            &w,
            &Counts {
                entries: 5_000,
                having: vec![1_000, 1_000, 1_000],
            },
        );
        assert_eq!(p.some, "('alpha')");
        // A word's other names are ranked apart, scaled by their number: ts_rank divides by it.
        let w = words("饲料");
        let p = plan(
            &w,
            &Counts {
                entries: 10,
                having: vec![2],
            },
        );
        assert_eq!(p.weights, [weight(2, 10)]);
        assert_eq!(p.own, ["'饲料'"]);
        assert_eq!(p.others, ["'feed' | 'fodder'"]);
        assert_eq!(p.others_scale, [2.0]);
    }
}
