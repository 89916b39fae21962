//! The ads ports over PostgreSQL. [`proposals`]: what `GET /ads` reads (the last sync's data,
//! summed in one statement per part), a proposal stored with its `ad_change` decision, a
//! person's approval or refusal inside the decision's transaction. [`work`]: storing a sync,
//! expiring proposals, and executing an approved change under its job's lease. The rules are
//! [`fleetdesk_ads::change`]'s: these modules load its facts and write its plans.

use crate::db::{Ts, Tx};
use crate::rows::Stored;
// The derive's code for an `#[diesel(embed)]` field names its trait unqualified.
use diesel::prelude::*;
use fleetdesk_ads::change::SyncedAd;
use fleetdesk_ads::proposal::{AdStatus, BudgetType, KnownAd};
use uuid::Uuid;

mod proposals;
mod work;

pub(crate) use proposals::{approve_change, refuse_change};

pub(crate) fn statements() -> Vec<(&'static str, &'static str)> {
    [proposals::statements(), work::statements()].concat()
}

#[cfg(any(test, feature = "testing"))]
pub(crate) fn row_checks() -> Vec<crate::rows::RowCheck> {
    [proposals::row_checks(), work::row_checks()].concat()
}

row! {
    struct IdRow {
        id: Uuid,
    }
}

row! {
    struct KnownAdRow into KnownAd {
        status: Stored<AdStatus>,
        budget_type: Stored<BudgetType>,
        budget: i64,
    }
}

row! {
    struct SyncedAdRow into SyncedAd {
        #[diesel(embed)]
        ad: KnownAdRow,
        currency: String,
    }
}
