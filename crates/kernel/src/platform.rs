use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The social platforms an account can live on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    Threads,
    Tiktok,
    X,
    Facebook,
    Instagram,
    Reddit,
}

impl Platform {
    pub const ALL: [Platform; 6] = [
        Platform::Threads,
        Platform::Tiktok,
        Platform::X,
        Platform::Facebook,
        Platform::Instagram,
        Platform::Reddit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Threads => "threads",
            Platform::Tiktok => "tiktok",
            Platform::X => "x",
            Platform::Facebook => "facebook",
            Platform::Instagram => "instagram",
            Platform::Reddit => "reddit",
        }
    }

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

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown platform {0:?}; expected one of threads, tiktok, x, facebook, instagram, reddit")]
pub struct UnknownPlatform(pub String);

impl FromStr for Platform {
    type Err = UnknownPlatform;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Platform::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownPlatform(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
