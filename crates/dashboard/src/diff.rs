//! The side-by-side diff of the body a person approved and the one an agent reported
//! published: each side's text with what the other lacks marked (`del` on the approved side,
//! `ins` on the published one). Text with spaces between its words is compared word by word;
//! Chinese, Japanese or Korean text, which has none, character by character.

use maud::{Markup, html};
use similar::{ChangeTag, TextDiff};

/// Whether a text is compared character by character: it holds CJK characters.
fn by_chars(text: &str) -> bool {
    text.chars().any(|c| {
        matches!(
            u32::from(c),
            0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF
        )
    })
}

/// Adds `text` to a side, joined to its last run when that one is marked the same way.
fn push(side: &mut Vec<(bool, String)>, changed: bool, text: &str) {
    match side.last_mut() {
        Some((last, run)) if *last == changed => run.push_str(text),
        _ => side.push((changed, text.to_owned())),
    }
}

/// Each side's runs: (changed, text), equal runs on both sides, neighbours of the same kind
/// joined.
pub(crate) fn runs(approved: &str, published: &str) -> [Vec<(bool, String)>; 2] {
    let diff = if by_chars(approved) || by_chars(published) {
        TextDiff::from_chars(approved, published)
    } else {
        TextDiff::from_words(approved, published)
    };
    let (mut old, mut new) = (Vec::new(), Vec::new());
    for change in diff.iter_all_changes() {
        let text = change.value();
        match change.tag() {
            ChangeTag::Equal => {
                push(&mut old, false, text);
                push(&mut new, false, text);
            }
            ChangeTag::Delete => push(&mut old, true, text),
            ChangeTag::Insert => push(&mut new, true, text),
        }
    }
    [old, new]
}

/// The two bodies side by side; the approved one absent when nobody approved the post.
pub(crate) fn side_by_side(approved: Option<&str>, published: &str) -> Markup {
    let Some(approved) = approved else {
        return html! {
            div.diff {
                div { h3 { "Approved" } p.muted { "Nobody approved this post." } }
                div { h3 { "Published" } p.body { (published) } }
            }
        };
    };
    let [old, new] = runs(approved, published);
    html! {
        div.diff {
            div {
                h3 { "Approved" }
                p.body { @for (changed, t) in &old { @if *changed { del { (t) } } @else { (t) } } }
            }
            div {
                h3 { "Published" }
                p.body { @for (changed, t) in &new { @if *changed { ins { (t) } } @else { (t) } } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(side: &[(bool, String)]) -> Vec<&str> {
        side.iter()
            .filter(|(c, _)| *c)
            .map(|(_, t)| t.as_str())
            .collect()
    }

    #[test]
    fn words_are_compared_in_spaced_text_and_characters_in_chinese() {
        let [old, new] = runs(
            "Evening rain on the bridge",
            "Evening rain on the old bridge",
        );
        assert_eq!(changed(&old), Vec::<&str>::new());
        assert_eq!(changed(&new), ["old "]);
        assert_eq!(new.len(), 3, "runs of one kind are joined: {new:?}");
        let [old, new] = runs("今天下雨了", "今天下大雨了");
        assert_eq!((changed(&old), changed(&new)), (vec![], vec!["大"]));
        let joined =
            |side: &[(bool, String)]| side.iter().map(|(_, t)| t.as_str()).collect::<String>();
        assert_eq!(joined(&old), "今天下雨了");
        assert_eq!(joined(&new), "今天下大雨了");
    }

    #[test]
    fn the_markup_marks_each_side_and_escapes_the_text() {
        let html = side_by_side(Some("a <b> c"), "a <b> d").into_string();
        assert!(html.contains("<del>c</del>"), "{html}");
        assert!(html.contains("<ins>d</ins>"), "{html}");
        assert!(html.contains("&lt;b&gt;"), "{html}");
        let never = side_by_side(None, "went out").into_string();
        assert!(never.contains("Nobody approved this post."), "{never}");
    }
}
