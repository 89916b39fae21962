use serde_json::{Map, Value};

/// A validated heartbeat. The same run_id updates the same record: the summary is replaced
/// (an absent summary keeps the previous one) and the counts are merged, same-named counters
/// replaced and new ones added.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatInput {
    pub run_id: String,
    pub summary: Option<String>,
    pub counts: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeartbeatError {
    #[error("run_id must be 1-120 characters")]
    RunId,
    #[error("summary must be at most 2000 characters")]
    Summary,
    #[error("counts must be an object of at most 100 counters, each named by 1-64 characters")]
    CountsShape,
    #[error("counts.{0} must be a non-negative integer")]
    CountValue(String),
}

impl HeartbeatError {
    pub fn field(&self) -> String {
        match self {
            HeartbeatError::RunId => "run_id".into(),
            HeartbeatError::Summary => "summary".into(),
            HeartbeatError::CountsShape => "counts".into(),
            HeartbeatError::CountValue(k) => format!("counts.{k}"),
        }
    }
}

pub const MAX_COUNTERS: usize = 100;

impl HeartbeatInput {
    pub fn new(
        run_id: &str,
        summary: Option<String>,
        counts: Option<Map<String, Value>>,
    ) -> Result<HeartbeatInput, HeartbeatError> {
        let run_id = run_id.trim();
        if run_id.is_empty() || run_id.chars().count() > 120 {
            return Err(HeartbeatError::RunId);
        }
        if summary.as_ref().is_some_and(|s| s.chars().count() > 2000) {
            return Err(HeartbeatError::Summary);
        }
        let counts = counts.unwrap_or_default();
        if counts.len() > MAX_COUNTERS {
            return Err(HeartbeatError::CountsShape);
        }
        for (k, v) in &counts {
            if k.is_empty() || k.chars().count() > 64 {
                return Err(HeartbeatError::CountsShape);
            }
            if v.as_u64().is_none() {
                return Err(HeartbeatError::CountValue(k.clone()));
            }
        }
        Ok(HeartbeatInput {
            run_id: run_id.to_owned(),
            summary,
            counts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn validates_limits_at_and_past_the_edge() {
        assert!(HeartbeatInput::new(&"r".repeat(120), Some("s".repeat(2000)), None).is_ok());
        assert_eq!(
            HeartbeatInput::new(&"r".repeat(121), None, None),
            Err(HeartbeatError::RunId)
        );
        assert_eq!(
            HeartbeatInput::new("", None, None),
            Err(HeartbeatError::RunId)
        );
        assert_eq!(
            HeartbeatInput::new("r", Some("s".repeat(2001)), None),
            Err(HeartbeatError::Summary)
        );
    }

    #[test]
    fn counters_must_be_non_negative_integers() {
        let e = HeartbeatInput::new("r", None, Some(obj(json!({"drafts": -1})))).unwrap_err();
        assert_eq!(e.field(), "counts.drafts");
        assert!(HeartbeatInput::new("r", None, Some(obj(json!({"drafts": 1.5})))).is_err());
        assert!(HeartbeatInput::new("r", None, Some(obj(json!({"drafts": 3})))).is_ok());
    }
}
