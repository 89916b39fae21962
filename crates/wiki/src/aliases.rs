//! Synonyms the tenant's own knowledge declares: a glossary entry (category `glossary`) that
//! writes `A醇 = 视黄醇` on a line of its body says the two name one thing, and a search for
//! either finds what is written with the other.
//!
//! A declaration is a line (or a part of one between `;` or `；`) of two or more names joined
//! by `=` (or the full-width `＝`), each name 1 to [`ALIAS_MAX_CHARS`] characters. A name is
//! kept as its search terms ([`search::terms`]), so 視黃醇 and 视黄醇 are one name. The
//! adapter stores an entry's groups ([`encode`]) and their terms ([`alias_terms`]); a search
//! loads the groups that share a term with the query and [`expand`]s it.

use crate::search;

/// The longest name a declaration may have, in characters: a longer side is prose, not a name.
pub const ALIAS_MAX_CHARS: usize = 40;

/// The names a declaration says are one thing, each as its terms, at least two distinct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasGroup(pub Vec<Vec<String>>);

/// The groups `text` declares, in order.
pub fn declared(text: &str) -> Vec<AliasGroup> {
    text.split(['\n', ';', '；'])
        .filter(|line| line.contains(['=', '＝']))
        .filter_map(|line| {
            let names: Vec<&str> = line.split(['=', '＝']).map(str::trim).collect();
            if names
                .iter()
                .any(|n| n.is_empty() || n.chars().count() > ALIAS_MAX_CHARS)
            {
                return None;
            }
            let mut group: Vec<Vec<String>> = Vec::new();
            for n in names {
                let terms = search::terms(n);
                if !terms.is_empty() && !group.contains(&terms) {
                    group.push(terms);
                }
            }
            (group.len() >= 2).then_some(AliasGroup(group))
        })
        .collect()
}

/// The one group a line declares (a tenant file's `wiki_synonyms` item), or why it declares
/// none: it must be two or more distinct names joined by `=`, each 1 to [`ALIAS_MAX_CHARS`]
/// characters with a search term, on one line.
pub fn one_group(line: &str) -> Result<AliasGroup, String> {
    const SHAPE: &str = "must be two or more different names joined by =, each 1-40 characters";
    if line.contains(['\n', ';', '；']) {
        return Err(format!("{SHAPE}, on one line"));
    }
    let mut groups = declared(line);
    match (groups.pop(), groups.is_empty()) {
        (Some(g), true) if g.0.len() == line.split(['=', '＝']).count() => Ok(g),
        _ => Err(SHAPE.to_owned()),
    }
}

/// The groups of a tenant file's `wiki_synonyms` lines, one a line; a line that declares
/// none ([`one_group`] refuses it, which the file's validation did first) is left out.
pub fn of_lines(lines: &[String]) -> Vec<AliasGroup> {
    lines.iter().filter_map(|l| one_group(l).ok()).collect()
}

/// One group as the adapter stores it: the names separated by `|`, a name's terms by spaces
/// (terms hold letters and digits only).
pub fn encode(group: &AliasGroup) -> String {
    group
        .0
        .iter()
        .map(|name| name.join(" "))
        .collect::<Vec<_>>()
        .join("|")
}

/// A group as [`encode`] stored it.
pub fn decode(stored: &str) -> AliasGroup {
    AliasGroup(
        stored
            .split('|')
            .map(|name| {
                name.split(' ')
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .filter(|name: &Vec<String>| !name.is_empty())
            .collect(),
    )
}

/// Every term of the groups, once each: what a search's terms are looked up by.
pub fn alias_terms(groups: &[AliasGroup]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in groups.iter().flat_map(|g| g.0.iter().flatten()) {
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    out
}

/// The names a query also asks for: of every group one of whose names the query has (all of
/// its terms), the group's other names, each once and none the query already has.
pub fn expand(query_terms: &[String], groups: &[AliasGroup]) -> Vec<Vec<String>> {
    let has = |name: &Vec<String>| name.iter().all(|t| query_terms.contains(t));
    let mut out: Vec<Vec<String>> = Vec::new();
    for g in groups.iter().filter(|g| g.0.iter().any(has)) {
        for name in g.0.iter().filter(|n| !has(n)) {
            if !out.contains(name) {
                out.push(name.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(g: &AliasGroup) -> Vec<String> {
        g.0.iter().map(|n| n.join(" ")).collect()
    }

    #[test]
    fn a_line_of_names_joined_by_equals_signs_is_a_group() {
        let groups =
            declared("A醇 = 視黃醇\n業配 ＝ 廣告合作 = 贊助內容；限動=限時動態\n乾貨：實用內容");
        assert_eq!(groups.len(), 3, "{groups:?}");
        // Traditional names are kept as their simplified terms; stop words drop (`a`).
        assert_eq!(names(&groups[0]), ["醇", "视黄醇"]);
        assert_eq!(groups[1].0.len(), 3);
        assert_eq!(names(&groups[2]), ["限动", "限时 动态"]);
    }

    #[test]
    fn a_side_that_is_empty_or_longer_than_a_name_declares_nothing() {
        assert!(declared("= 视黄醇").is_empty());
        assert!(declared("x = ").is_empty());
        let long = "很".repeat(ALIAS_MAX_CHARS) + "长";
        assert!(declared(&format!("短 = {long}")).is_empty());
        let at_limit = "视".repeat(ALIAS_MAX_CHARS);
        assert_eq!(declared(&format!("短片 = {at_limit}")).len(), 1);
        // Two spellings of one name are no synonym.
        assert!(declared("貓咪 = 猫咪").is_empty());
    }

    #[test]
    fn a_tenant_file_line_is_exactly_one_group() {
        assert_eq!(one_group("A醇 = 視黃醇").map(|g| g.0.len()), Ok(2));
        assert!(one_group("A醇 = 視黃醇; 限動 = 限時動態").is_err());
        assert!(one_group("視黃醇").is_err());
        // Every name must count: one with no term (only stop words) or a repeat is an error.
        assert!(one_group("the = 視黃醇").is_err());
        assert!(one_group("貓咪 = 猫咪 = cat").is_err());
        let at_limit = "视".repeat(ALIAS_MAX_CHARS);
        assert!(one_group(&format!("短片 = {at_limit}")).is_ok());
        assert!(one_group(&format!("短片 = {at_limit}视")).is_err());
        let lines = ["A醇 = 視黃醇".to_owned(), "視黃醇".to_owned()];
        assert_eq!(of_lines(&lines).len(), 1);
    }

    #[test]
    fn a_group_survives_storage() {
        let g = &declared("Threads = 脆 = meta threads")[0];
        assert_eq!(&decode(&encode(g)), g);
        assert_eq!(
            alias_terms(std::slice::from_ref(g)),
            ["thread", "脆", "meta"]
        );
    }

    #[test]
    fn a_query_with_one_name_also_asks_for_the_others() {
        let groups = declared("A醇 = 視黃醇\n限動 = 限時動態\n開箱 = unboxing");
        let q = search::query_terms("视黄醇 晚上用");
        assert_eq!(expand(&q, &groups), [vec!["醇".to_owned()]]);
        let q = search::query_terms("限時動態 貼紙");
        assert_eq!(expand(&q, &groups), [vec!["限动".to_owned()]]);
        // A name is had only with all its terms.
        let q = search::query_terms("動態");
        assert!(expand(&q, &groups).is_empty());
    }
}
