//! Field types that state their rule once: the parser enforces it while deserializing (a 400
//! naming the field) and the description states it. They are the kernel's
//! (`fleetdesk_kernel::wire::fields`), shared with clients; what reads a batch's items as a
//! request is here.

pub use fleetdesk_kernel::component_items;
pub use fleetdesk_kernel::wire::fields::*;
use serde_json::Value;

/// Reading a batch's items, each on its own, as the parser reads a request.
pub trait ReadItems<T> {
    /// Each item read as a `T`, or what `fault` makes of the item as sent and why it cannot be
    /// read; in the batch's order.
    fn read<E>(self, fault: impl Fn(&Value, ItemFault) -> E) -> Vec<Result<T, E>>;
}

impl<T, const MIN: usize, const MAX: usize> ReadItems<T> for Items<T, MIN, MAX>
where
    T: serde::de::DeserializeOwned + validator::Validate,
{
    fn read<E>(self, fault: impl Fn(&Value, ItemFault) -> E) -> Vec<Result<T, E>> {
        self.into_raw()
            .into_iter()
            .map(|value| {
                // A NUL no text column stores, then the item's shape and limits.
                let read = match crate::input::find_nul(&value, "") {
                    Some(field) => Err(crate::error::ApiError::invalid(
                        field,
                        "must not contain NUL characters",
                    )),
                    None => crate::input::parse_part::<T>(value.clone(), ""),
                };
                read.map_err(|e| {
                    let field = e
                        .field
                        .clone()
                        .filter(|f| f != crate::input::REQUEST_BODY)
                        .unwrap_or_default();
                    // The error's message starts with its field; the reason is the rest.
                    let reason = match e.message.split_once(": ") {
                        Some((_, r)) if !field.is_empty() => r.to_owned(),
                        _ => e.message.clone(),
                    };
                    let reason = reason
                        .strip_prefix(&format!("{}: ", crate::input::REQUEST_BODY))
                        .map(str::to_owned)
                        .unwrap_or(reason);
                    // The answer may be stored (a replay, jsonb): no NUL in what it names.
                    let field = field.replace('\0', "\u{FFFD}");
                    let reason = reason.replace('\0', "\u{FFFD}");
                    fault(&value, ItemFault { field, reason })
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, validator::Validate)]
    #[serde(deny_unknown_fields)]
    struct Probe {
        id: Text<1, 3>,
    }

    #[test]
    fn a_batch_reads_each_item_on_its_own_and_refuses_only_its_size() {
        let items: Items<Probe, 1, 3> =
            serde_json::from_value(json!([{"id": "a"}, {}, {"id": "abcd"}])).unwrap();
        let read = items.read(|item, f| (item.clone(), f));
        assert_eq!(read[0].as_ref().unwrap().id.as_str(), "a");
        let (item, f) = read[1].as_ref().unwrap_err();
        assert_eq!(
            (item, f.field.as_str(), f.reason.as_str()),
            (&json!({}), "id", "is required")
        );
        let (_, f) = read[2].as_ref().unwrap_err();
        assert_eq!(
            (f.field.as_str(), f.reason.as_str()),
            ("id", "must be 1-3 characters long")
        );
        // A NUL anywhere in an item is that item's answer.
        let items: Items<Probe, 1, 3> =
            serde_json::from_value(json!([{"id": "a\u{0}"}, {"id\u{0}": 1}])).unwrap();
        let read = items.read(|_, f| f);
        let faults: Vec<(&str, &str)> = read
            .iter()
            .map(|r| {
                let f = r.as_ref().unwrap_err();
                (f.field.as_str(), f.reason.as_str())
            })
            .collect();
        assert_eq!(
            faults,
            [
                ("id", "must not contain NUL characters"),
                ("id\u{FFFD}", "must not contain NUL characters")
            ]
        );
        // Not an object: the item as a whole.
        let items: Items<Probe, 1, 3> = serde_json::from_value(json!([7])).unwrap();
        let (_, f) = items
            .read(|item, f| (item.clone(), f))
            .remove(0)
            .unwrap_err();
        assert_eq!(f.field, "");
        assert!(
            !f.reason.is_empty() && !f.reason.contains("request body"),
            "{f:?}"
        );
        // Only the batch's size refuses the request.
        let e = serde_json::from_value::<Items<Probe, 1, 3>>(json!([])).unwrap_err();
        assert_eq!(e.to_string(), "must have 1-3 items");
        assert!(serde_json::from_value::<Items<Probe, 1, 3>>(json!([1, 2, 3, 4])).is_err());
        assert!(serde_json::from_value::<Items<Probe, 1, 3>>(json!({"id": "a"})).is_err());
    }
}
