//! Invoices from the store: a cluster's plan history (`plan_history`, one row per interval
//! start, written with each change) priced by `policy::pricing`, for one cluster or for
//! every cluster of the account in a month.
//!
//! Must not touch: sockets, the catalog's records (it reads ids and times).

use super::store::{PlanChange, Store, StoreError};
use crate::policy::pricing::{self, Invoice, Month, PriceChange};
use crate::registry::Catalog;

/// The pricing input of a plan history.
pub fn price_changes(history: &[PlanChange]) -> Vec<PriceChange> {
    history
        .iter()
        .map(|h| PriceChange {
            at: h.at,
            plan: h.plan.clone(),
            monthly_price_cents: h.monthly_price_cents.unwrap_or(0),
        })
        .collect()
}

/// Cluster `id`'s invoice of `month`.
pub fn invoice(store: &mut dyn Store, id: &str, month: Month) -> Result<Invoice, StoreError> {
    let history = store.plan_history(id)?;
    Ok(pricing::invoice(&price_changes(&history), month))
}

/// The invoices of `month` of every cluster (tombstones included) with a line in it, by id.
pub fn invoices(
    store: &mut dyn Store,
    catalog: &Catalog,
    month: Month,
) -> Result<Vec<(String, Invoice)>, StoreError> {
    let (start, end) = (month.start() * 1000, month.end() * 1000);
    let mut out = Vec::new();
    for c in catalog.clusters.values() {
        let gone_before = c.destroyed_at.is_some_and(|d| d < start);
        if c.created_at >= end || gone_before {
            continue;
        }
        let inv = invoice(store, &c.id, month)?;
        if !inv.lines.is_empty() {
            out.push((c.id.clone(), inv));
        }
    }
    Ok(out)
}
