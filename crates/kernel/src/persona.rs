//! The persona vocabulary the tenant file and the persona rules share: a persona's status, the
//! categories a fact is filed under and where a fact stands.

use serde::{Deserialize, Serialize};

crate::text_enum! {
    /// A persona an agent creates waits for a person (`pending`) until confirmed; a dismissed
    /// one is `retired`: hidden from agents, its name free again.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum PersonaStatus {
        Pending => "pending",
        Confirmed => "confirmed",
        Retired => "retired",
    }
}

crate::text_enum! {
    /// The categories a persona fact is filed under.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum FactCategory {
        Identity => "identity",
        Pet => "pet",
        Home => "home",
        Work => "work",
        Speech => "speech",
        Photo => "photo",
        Belonging => "belonging",
        BrandLiked => "brand_liked",
        BrandEndorsing => "brand_endorsing",
        BrandCollaborated => "brand_collaborated",
        Habit => "habit",
        Event => "event",
        VoiceAudio => "voice_audio",
        Other => "other",
    }
}

crate::text_enum! {
    /// Where a fact stands: decided by a person, proposed by an agent and waiting, refused, or
    /// replaced by a later decision of the same category and label.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum FactStatus {
        Draft => "draft",
        Decided => "decided",
        Refused => "refused",
        Replaced => "replaced",
    }
}
