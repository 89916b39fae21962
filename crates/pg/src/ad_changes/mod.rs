//! The ads ports over PostgreSQL. [`proposals`]: what `GET /ads` reads (the last sync's data,
//! summed in one statement per part), a proposal stored with its `ad_change` decision, a
//! person's approval or refusal inside the decision's transaction. [`work`]: storing a sync,
//! expiring proposals, and executing an approved change under its job's lease. The rules are
//! [`fleetdesk_ads::change`]'s: these modules load its facts and write its plans.

use diesel_async::AsyncPgConnection;
use fleetdesk_ads::change::SyncedAd;
use fleetdesk_ads::proposal::{AdStatus, BudgetType, KnownAd};
use fleetdesk_kernel::money::Cents;
use uuid::Uuid;

mod proposals;
mod work;

pub(crate) use proposals::{approve_change, refuse_change};

type Ts = jiff_diesel::Timestamp;
type Tx<'c> = &'c mut AsyncPgConnection;

pub(crate) fn statements() -> Vec<(&'static str, &'static str)> {
    [proposals::statements(), work::statements()].concat()
}

#[cfg(any(test, feature = "testing"))]
pub(crate) fn row_checks() -> Vec<crate::rows::RowCheck> {
    [proposals::row_checks(), work::row_checks()].concat()
}

fn parsed<T>(what: &str, text: &str, parse: impl Fn(&str) -> Option<T>) -> anyhow::Result<T> {
    parse(text).ok_or_else(|| anyhow::anyhow!("stored {what} {text:?}"))
}

fn budget_type(text: &str) -> anyhow::Result<BudgetType> {
    parsed("budget type", text, BudgetType::parse)
}

row! {
    struct IdRow {
        id: Uuid,
    }
}

row! {
    struct KnownAdRow {
        status: String,
        budget_type: String,
        budget: i64,
        currency: String,
    }
}

impl KnownAdRow {
    fn known(&self) -> anyhow::Result<KnownAd> {
        Ok(KnownAd {
            status: parsed("ad status", &self.status, AdStatus::parse)?,
            budget_type: budget_type(&self.budget_type)?,
            budget: Cents(self.budget),
        })
    }

    fn synced(self) -> anyhow::Result<SyncedAd> {
        Ok(SyncedAd {
            ad: self.known()?,
            currency: self.currency,
        })
    }
}
