use serde::{Deserialize, Serialize};
use std::str::FromStr;

crate::text_enum! {
    /// The social platforms an account can live on.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum Platform {
        Threads => "threads",
        Tiktok => "tiktok",
        X => "x",
        Facebook => "facebook",
        Instagram => "instagram",
        Reddit => "reddit",
    }
}

impl Platform {
    /// Media items one post may carry, images and videos together.
    pub fn media_cap(self) -> usize {
        match self {
            Platform::Instagram => 10,
            _ => 4,
        }
    }

    pub fn carries_video(self) -> bool {
        self != Platform::Reddit
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown platform {0:?}; expected one of threads, tiktok, x, facebook, instagram, reddit")]
pub struct UnknownPlatform(pub String);

impl FromStr for Platform {
    type Err = UnknownPlatform;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Platform::parse(s).ok_or_else(|| UnknownPlatform(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_text_is_the_serde_form() {
        for p in Platform::ALL {
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        for c in crate::ErrorCode::ALL {
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
    }

    #[test]
    fn round_trips_every_platform_name() {
        for p in Platform::ALL {
            assert_eq!(p.as_str().parse::<Platform>().unwrap(), p);
        }
        assert!("Threads".parse::<Platform>().is_err());
    }

    #[test]
    fn media_caps_follow_the_limits_table() {
        assert_eq!(Platform::Instagram.media_cap(), 10);
        assert_eq!(Platform::Threads.media_cap(), 4);
        assert!(!Platform::Reddit.carries_video());
        assert!(Platform::Tiktok.carries_video());
    }
}
