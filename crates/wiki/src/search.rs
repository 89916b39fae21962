//! Search terms: one pipeline turns text into the terms PostgreSQL stores and a query into the
//! terms it looks for, so both sides always agree.
//!
//! 1. [`fold`]: full-width forms to ASCII, lower case, traditional Chinese to simplified
//!    (OpenCC's dictionaries through `hanconv`), so 貓咪 and 猫咪 are one word;
//! 2. segmentation with jieba's search mode (a long word also gives its dictionary sub-words);
//! 3. runs of letters and digits only, split where Latin meets other scripts; English words
//!    are stemmed (Snowball) and stop words of either language dropped: function words and
//!    the words of a question (怎麼, 如何, how, what), which say nothing of the topic and would
//!    otherwise let any entry that has them into the results;
//! 4. Taiwan wording: where OpenCC's Taiwan phrase table words a text differently from its
//!    plain conversion (影片 is 视频, 網路 is 网络, 軟體 is 软件), the mainland words are added
//!    as terms too, so Taiwan and mainland wording of one thing match either way while text
//!    that uses the same word in both (设定) still matches itself.
//!
//! 5. English for Chinese words ([`pivot`]): a Chinese word also gives the English words
//!    CC-CEDICT says it means (`fleetdesk_cedict`), stemmed like English text; an entry stores
//!    them beside its terms (weight C for the title, summary and tags, D for the body) and a
//!    query asks for them too. English is the pivot: an English query meets a Chinese entry
//!    through its stored English words, a Chinese query an English entry through its own, and
//!    two Chinese words of one meaning (玻尿酸, 透明质酸) meet through the English they share.
//!
//! The adapter stores the terms space-separated and lets PostgreSQL's `simple` configuration
//! turn them into a `tsvector` (a GIN index, ranked by `ts_rank`): no index lives in one
//! instance's memory.

use std::sync::LazyLock;

/// Who made the dictionary behind [`pivot`] and under which licence: shown wherever search
/// results are (its licence, CC BY-SA 4.0, asks for it).
pub use fleetdesk_cedict::ATTRIBUTION as DICTIONARY_ATTRIBUTION;

/// The longest snippet, in characters, ellipses included.
pub const SNIPPET_MAX: usize = 160;

/// The weights `ts_rank` gives the four tsvector weight classes, in PostgreSQL's order
/// `{D, C, B, A}`: body terms (and their English) are stored as D, the English of the title's,
/// summary's and tags' Chinese words as C, summary and tags as B, title as A. The English of a
/// Chinese title weighs more than a summary's own words (an English query names the topic the
/// title names) and less than the title's own words.
pub const RANK_WEIGHTS: [f32; 4] = [0.1, 0.6, 0.4, 1.0];

/// `ts_rank`'s normalization flags: 1 divides the rank by 1 + the logarithm of the entry's
/// length, so a long body does not outrank a short one on repeats alone.
pub const RANK_NORMALIZATION: i32 = 1;

static JIEBA: LazyLock<jieba_rs::Jieba> = LazyLock::new(jieba_rs::Jieba::new);
/// The trade's own words ([`AGENCY_SENSES`]): word → its senses, `;`-separated.
static AGENCY: LazyLock<std::collections::HashMap<&'static str, &'static str>> =
    LazyLock::new(|| {
        AGENCY_SENSES
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| l.split_once('\t'))
            .collect()
    });
static STEMMER: LazyLock<rust_stemmers::Stemmer> =
    LazyLock::new(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));

/// English stop words: articles, pronouns, auxiliaries, prepositions, conjunctions and
/// question words (checked before stemming).
const EN_STOP: &[&str] = &[
    "a", "about", "am", "an", "and", "are", "as", "at", "be", "been", "being", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she",
    "should", "so", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "to", "us", "was", "we", "were", "what", "when", "where", "which", "who",
    "why", "will", "with", "would", "you", "your",
];
/// Chinese stop words (simplified, as text is after [`fold`]): particles, pronouns, common
/// function words and question words.
const ZH_STOP: &[&str] = &[
    "的",
    "了",
    "是",
    "在",
    "和",
    "与",
    "及",
    "或",
    "也",
    "都",
    "就",
    "而",
    "着",
    "吗",
    "呢",
    "吧",
    "啊",
    "之",
    "这",
    "那",
    "个",
    "我",
    "我们",
    "你",
    "你们",
    "他",
    "她",
    "它",
    "他们",
    "她们",
    "要",
    "会",
    "能",
    "可以",
    "有",
    "里",
    "把",
    "被",
    "让",
    "给",
    "对",
    "从",
    "还",
    "又",
    "再",
    "很",
    "怎么",
    "怎么办",
    "怎么样",
    "怎样",
    "如何",
    "什么",
    "为什么",
    "哪些",
    "哪个",
    "哪里",
    "几个",
    "多少",
    "时候",
    "什么时候",
];

/// Loads the segmenter's dictionary and the script tables now rather than on the first search
/// (about a tenth of a second).
pub fn warm_up() {
    fleetdesk_cedict::warm_up();
    LazyLock::force(&JIEBA);
    LazyLock::force(&AGENCY);
    LazyLock::force(&STEMMER);
    let _ = fold("繁體");
}

/// Full-width forms to ASCII, lower case, traditional to simplified Chinese. Keeps every
/// character's place in all but rare phrase conversions (see [`snippet`]).
pub fn fold(text: &str) -> String {
    hanconv::t2s(narrow(text))
}

/// Full-width forms to ASCII and lower case.
fn narrow(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            '\u{3000}' => ' ',
            _ => c,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// A title as it is matched: folded, inner white space collapsed to one space.
pub fn title_key(title: &str) -> String {
    fold(title).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The search terms of `text`, in order, repeats kept (they weigh in the ranking); then the
/// mainland words of its Taiwan wording that the plain conversion does not give (step 4).
pub fn terms(text: &str) -> Vec<String> {
    let folded = fold(text);
    let mut out = segment(&folded);
    if let Some(mainland) = mainland(text, &folded) {
        let mut plain: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for t in &out {
            *plain.entry(t.clone()).or_default() += 1;
        }
        for t in segment(&mainland) {
            match plain.get_mut(&t) {
                Some(n) if *n > 0 => *n -= 1,
                _ => out.push(t),
            }
        }
    }
    out
}

/// `text` in mainland wording (OpenCC's Taiwan phrases), folded, when that differs from its
/// plain conversion `folded` (step 4).
pub(crate) fn mainland(text: &str, folded: &str) -> Option<String> {
    if !folded.chars().any(is_han) {
        return None;
    }
    let mainland = hanconv::tw2sp(narrow(text));
    (mainland != folded).then_some(mainland)
}

fn segment(folded: &str) -> Vec<String> {
    spans(folded).into_iter().map(|s| s.term).collect()
}

/// A term of a folded text and where its letters are, in characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    pub term: String,
    pub start: usize,
    pub end: usize,
}

/// The terms of `folded` (as [`fold`] gives it) with where each is.
pub(crate) fn spans(folded: &str) -> Vec<Span> {
    let mut out = Vec::new();
    for token in JIEBA.cut_for_search(folded, true) {
        push_word(token.word, token.start, &mut out);
    }
    out
}

pub(crate) fn is_han(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{20000}'..='\u{2FA1F}')
}

/// How many of a word's senses (the dictionary's first, its usual meanings) give English words:
/// a single character stands for many things, so it gives only its first.
pub const PIVOT_SENSES: usize = 3;
pub const PIVOT_SENSES_ONE_CHARACTER: usize = 1;
/// A sense longer than this many words (stop words aside) explains rather than translates
/// ("knowledge presented in readily assimilable form"): it gives nothing.
pub const PIVOT_SENSE_WORDS: usize = 3;
/// Words of CC-CEDICT's senses that stand for an argument, not a meaning.
const GLOSS_STOP: &[&str] = &[
    "sb",
    "sth",
    "etc",
    "one",
    "oneself",
    "someone",
    "something",
    "somebody",
    "thing",
    "things",
    "s",
    "esp",
    "e",
    "g",
    "fig",
    "lit",
    "coll",
    "person",
    "people",
    "kind",
    "type",
    "way",
];

/// The English of social-media and agency words that CC-CEDICT lacks or gives another meaning
/// (带货 is "to smuggle" there, 触及 "to touch on"): a word it lists takes its senses instead of
/// the dictionary's in [`pivot`]. fleetdesk's own table (data/agency_senses.tsv), written from
/// the trade's usage.
pub const AGENCY_SENSES: &str = include_str!("../data/agency_senses.tsv");

/// The English words (stemmed, as [`terms`] gives English) that the Chinese word `term`
/// (simplified, as [`terms`] gives it) means, by [`AGENCY_SENSES`] for the trade's words, else
/// by CC-CEDICT: the words of its first senses ([`PIVOT_SENSES`]) that translate in at most
/// [`PIVOT_SENSE_WORDS`] words, each once. None for a word neither has, or that is not
/// Chinese.
pub fn pivot(term: &str) -> Vec<String> {
    if !term.chars().all(is_han) {
        return Vec::new();
    }
    let take = if term.chars().count() == 1 {
        PIVOT_SENSES_ONE_CHARACTER
    } else {
        PIVOT_SENSES
    };
    let mut out: Vec<String> = Vec::new();
    let senses: Vec<&str> = match AGENCY.get(term) {
        Some(own) => own.split(';').collect(),
        None => fleetdesk_cedict::senses(term)
            .flat_map(|s| s.split([';', ',']))
            .collect(),
    };
    let meanings = senses
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .take(take);
    for meaning in meanings {
        let words: Vec<String> = meaning
            .split(|c: char| !c.is_ascii_alphanumeric())
            .map(str::to_ascii_lowercase)
            .filter(|w| {
                !w.is_empty() && !EN_STOP.contains(&w.as_str()) && !GLOSS_STOP.contains(&w.as_str())
            })
            .collect();
        if words.len() > PIVOT_SENSE_WORDS {
            continue;
        }
        for w in words {
            let stem = STEMMER.stem(&w).into_owned();
            if !out.contains(&stem) {
                out.push(stem);
            }
        }
    }
    out
}

/// The longest run of adjacent terms [`pivots`] joins to look a word up in the dictionary.
const COMPOUND_TERMS: usize = 3;

/// The English words of the Chinese terms among `terms` ([`pivot`]), in order, repeats kept
/// as the terms repeat.
pub fn pivot_terms(terms: &[String]) -> Vec<String> {
    pivots(terms)
        .into_iter()
        .flat_map(|(_, stems)| stems)
        .collect()
}

/// For each term of `terms` that has English ([`pivot`]), its place and its English; then,
/// where two or three adjacent Chinese terms join into a word the dictionary has and the
/// segmenter split (玻尿酸 segmented 玻, 尿酸), that word's English at its first term's place.
pub(crate) fn pivots(terms: &[String]) -> Vec<(usize, Vec<String>)> {
    let mut out: Vec<(usize, Vec<String>)> = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        let own = pivot(t);
        if !own.is_empty() {
            out.push((i, own));
        }
        for n in 2..=COMPOUND_TERMS {
            let Some(run) = terms.get(i..i + n) else {
                break;
            };
            if !run.iter().all(|t| t.chars().all(is_han)) {
                break;
            }
            let compound = pivot(&run.concat());
            if !compound.is_empty() {
                out.push((i, compound));
            }
        }
    }
    out
}

/// What the adapter stores for `text`: its terms separated by spaces.
pub fn index_text(text: &str) -> String {
    terms(text).join(" ")
}

/// The `to_tsquery('simple', …)` text of a query: any of its terms (ranking favours entries
/// that have more of them). None when the query has no term at all.
pub fn ts_query(query: &str) -> Option<String> {
    let terms = query_terms(query);
    (!terms.is_empty()).then(|| {
        terms
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(" | ")
    })
}

/// A query's distinct terms, first occurrence first, then the English its Chinese words mean
/// ([`pivot`]). Terms hold letters and digits only, so quoting them in a tsquery needs no
/// escaping.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let direct = terms(query);
    let english = pivot_terms(&direct);
    direct
        .into_iter()
        .chain(english)
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

fn push_word(word: &str, at: usize, out: &mut Vec<Span>) {
    let mut run = String::new();
    let mut start = at;
    let mut latin = false;
    for (i, c) in word.chars().enumerate() {
        if c.is_alphanumeric() {
            if !run.is_empty() && c.is_ascii() != latin {
                flush(&mut run, latin, start, at + i, out);
            }
            if run.is_empty() {
                start = at + i;
            }
            latin = c.is_ascii();
            run.push(c);
        } else {
            flush(&mut run, latin, start, at + i, out);
        }
    }
    flush(&mut run, latin, start, at + word.chars().count(), out);
}

fn flush(run: &mut String, latin: bool, start: usize, end: usize, out: &mut Vec<Span>) {
    if run.is_empty() {
        return;
    }
    let term = if latin {
        (!EN_STOP.contains(&run.as_str())).then(|| STEMMER.stem(run).into_owned())
    } else {
        (!ZH_STOP.contains(&run.as_str())).then(|| run.clone())
    };
    if let Some(term) = term {
        out.push(Span { term, start, end });
    }
    run.clear();
}

/// Up to [`SNIPPET_MAX`] characters of `body` around the place where the most of `terms`
/// (as [`query_terms`] gives them) meet, with `…` where the body goes on. Without a hit, the
/// body's beginning.
pub fn snippet(body: &str, terms: &[String]) -> String {
    let chars: Vec<char> = body.chars().collect();
    if chars.len() <= SNIPPET_MAX {
        return body.to_owned();
    }
    let folded: Vec<char> = fold(body).chars().collect();
    // A phrase conversion that changed the length: places in the folded text are only near
    // the body's; clamp them.
    let words = latin_words(&folded);
    let hits: Vec<usize> = terms
        .iter()
        .filter_map(|t| {
            // An English term is a stem (`repli` of `reply`): it is found where a word of the
            // body stems to it; other terms are found as they are.
            if t.chars().all(|c| c.is_ascii_alphanumeric()) {
                let stemmed = words.iter().find(|(_, w)| STEMMER.stem(w) == t.as_str());
                stemmed
                    .map(|(at, _)| *at)
                    .or_else(|| find_chars(&folded, t))
            } else {
                find_chars(&folded, t)
            }
        })
        .map(|i| i.min(chars.len() - 1))
        .collect();
    let span = SNIPPET_MAX - 2;
    let best = hits.iter().copied().max_by_key(|&start| {
        let covered = hits
            .iter()
            .filter(|&&h| h >= start && h < start + span)
            .count();
        (covered, std::cmp::Reverse(start))
    });
    let start = match best {
        Some(hit) => hit.saturating_sub(20).min(chars.len() - span),
        None => 0,
    };
    let mut out = String::new();
    let mut room = SNIPPET_MAX;
    if start > 0 {
        out.push('…');
        room -= 1;
    }
    let end = if start + room >= chars.len() {
        chars.len()
    } else {
        start + room - 1
    };
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}

/// The runs of ASCII letters and digits of `text`, with where each starts (in characters).
fn latin_words(text: &[char]) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut run = String::new();
    for (i, c) in text.iter().enumerate() {
        if c.is_ascii_alphanumeric() {
            run.push(*c);
        } else if !run.is_empty() {
            out.push((i - run.len(), std::mem::take(&mut run)));
        }
    }
    if !run.is_empty() {
        out.push((text.len() - run.len(), run));
    }
    out
}

fn find_chars(hay: &[char], needle: &str) -> Option<usize> {
    let needle: Vec<char> = needle.chars().collect();
    if needle.is_empty() || needle.len() > hay.len() {
        return None;
    }
    hay.windows(needle.len())
        .position(|w| w == needle.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traditional_and_simplified_give_the_same_terms() {
        assert_eq!(terms("貓咪的飼料"), terms("猫咪的饲料"));
        assert!(terms("貓咪").contains(&"猫咪".to_owned()));
        assert_eq!(title_key("  貓咪  指南 "), title_key("猫咪 指南"));
        assert_eq!(title_key("Voice GUIDE"), title_key("voice guide"));
    }

    #[test]
    fn chinese_is_segmented_into_words() {
        let t = terms("我們每天發布短影音");
        assert!(t.iter().any(|w| w == "每天"), "{t:?}");
        assert!(!t.iter().any(|w| w == "的"));
    }

    #[test]
    fn english_is_stemmed_and_stop_words_dropped() {
        assert_eq!(terms("Posting the schedules"), terms("posts schedule"));
        assert!(!terms("the cat").contains(&"the".to_owned()));
    }

    #[test]
    fn question_words_are_not_terms() {
        assert_eq!(query_terms("貓咪飼料怎麼挑？"), query_terms("猫咪 饲料 挑"));
        assert_eq!(query_terms("How do we write a hook?"), ["write", "hook"]);
        assert_eq!(ts_query("什麼時候 可以"), None);
    }

    #[test]
    fn taiwan_wording_also_gives_the_mainland_words() {
        // 影片 (Taiwan) is 视频 (mainland): each finds the other.
        assert!(terms("短影片字幕").contains(&"视频".to_owned()));
        assert!(query_terms("影片").contains(&"视频".to_owned()));
        assert!(terms("網路行銷").contains(&"网络".to_owned()));
        // The plain conversion stays: a word both sides write alike still matches itself.
        assert!(terms("角色設定").contains(&"设定".to_owned()));
        // Simplified text and text without Taiwan wording gain nothing.
        assert_eq!(terms("短视频字幕"), terms("短視頻字幕"));
        assert_eq!(terms("貓咪的飼料"), ["猫咪", "饲料"]);
    }

    #[test]
    fn mixed_text_splits_where_latin_meets_chinese() {
        let t = terms("iPhone15手機殼");
        assert!(t.contains(&"iphone15".to_owned()), "{t:?}");
        assert!(t.iter().any(|w| w.contains('手')), "{t:?}");
        assert_eq!(terms("ＡＢＣ"), terms("abc"));
    }

    #[test]
    fn a_query_is_any_of_its_distinct_terms() {
        // The query's words, then the English of its Chinese ones.
        assert_eq!(
            ts_query("猫咪 貓咪 food").as_deref(),
            Some("'猫咪' | 'food' | 'cat' | 'kitti'")
        );
        assert_eq!(ts_query("  ...  "), None);
    }

    #[test]
    fn the_snippet_finds_an_english_word_whose_stem_is_not_in_it() {
        let body = format!(
            "{} Reply within an hour. {}",
            "x ".repeat(150),
            "y ".repeat(150)
        );
        let s = snippet(&body, &query_terms("replies"));
        assert!(s.contains("Reply within"), "{s}");
    }

    #[test]
    fn the_trades_words_take_their_own_english_over_the_dictionarys() {
        // CC-CEDICT: 带货 "to smuggle", 触及 "to touch on".
        assert!(fleetdesk_cedict::senses("带货").any(|s| s == "to smuggle"));
        let selling = pivot("带货");
        assert!(selling.contains(&"live".to_owned()), "{selling:?}");
        assert!(!selling.contains(&"smuggl".to_owned()), "{selling:?}");
        assert_eq!(pivot("触及"), ["reach"]);
        // A word the table does not list keeps the dictionary's senses.
        assert_eq!(pivot("夜市"), ["night", "market"]);
    }

    #[test]
    fn every_line_of_the_trades_table_is_a_folded_word_and_short_senses() {
        let lines: Vec<&str> = AGENCY_SENSES
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect();
        assert!(lines.len() >= 80, "{}", lines.len());
        let mut seen = std::collections::HashSet::new();
        for line in lines {
            let (word, senses) = line.split_once('\t').expect(line);
            assert!(word.chars().all(is_han), "{line}");
            assert_eq!(
                fold(word),
                word,
                "{line}: the table is in simplified script"
            );
            assert!(seen.insert(word), "{word} twice");
            let senses: Vec<&str> = senses.split(';').map(str::trim).collect();
            assert!(senses.len() <= PIVOT_SENSES, "{line}");
            for s in senses {
                // A hyphen would split a word in two (post-mortem giving the common "post").
                assert!(
                    s.chars().all(|c| c.is_ascii_alphanumeric() || c == ' '),
                    "{line}: {s}"
                );
                let words = s.split(' ').filter(|w| !EN_STOP.contains(w)).count();
                assert!((1..=PIVOT_SENSE_WORDS).contains(&words), "{line}: {s}");
            }
            assert!(!pivot(word).is_empty(), "{line}");
        }
    }

    #[test]
    fn the_snippet_is_at_most_160_characters_around_the_best_hit() {
        let body = format!("{}貓咪愛吃魚{}", "開頭".repeat(200), "結尾".repeat(200));
        let s = snippet(&body, &query_terms("猫咪"));
        assert!(s.chars().count() <= SNIPPET_MAX, "{}", s.chars().count());
        assert!(s.contains("貓咪"), "{s}");
        assert!(s.starts_with('…') && s.ends_with('…'));
        let none = snippet(&body, &query_terms("dog"));
        assert!(none.starts_with("開頭") && none.chars().count() == SNIPPET_MAX);
        assert_eq!(snippet("short", &[]), "short");
    }
}
