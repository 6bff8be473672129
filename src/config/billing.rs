//! `[billing]`: how often usage is sampled and how long it is kept, and where overage
//! notices go (see docs/billing.md).
//!
//! Must not touch: sockets, runtime state.

use std::time::Duration;

use serde::Deserialize;

use super::Dur;

/// `[billing]`: usage history and overage notices (see docs/billing.md).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BillingConfig {
    /// A usage sample of every cluster is stored this often.
    #[serde(default = "default_usage_interval")]
    pub usage_interval: Dur,
    /// Samples older than this are deleted.
    #[serde(default = "default_usage_retention")]
    pub usage_retention: Dur,
    /// Overage notices are POSTed here as JSON (`http://` or `https://`); absent: none.
    pub webhook: Option<String>,
    /// Each delivery attempt gives up after this long (then it is retried with backoff).
    #[serde(default = "default_webhook_timeout")]
    pub webhook_timeout: Dur,
}

impl Default for BillingConfig {
    fn default() -> Self {
        BillingConfig {
            usage_interval: default_usage_interval(),
            usage_retention: default_usage_retention(),
            webhook: None,
            webhook_timeout: default_webhook_timeout(),
        }
    }
}

impl BillingConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        let b = self;
        if b.usage_interval.0 < Duration::from_secs(1) {
            return Err("billing.usage_interval: must be at least 1s".into());
        }
        if b.usage_retention.0 < b.usage_interval.0 {
            return Err("billing.usage_retention: must be at least usage_interval".into());
        }
        if let Some(url) = &b.webhook {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "billing.webhook: `{url}` must be an http:// or https:// URL"
                ));
            }
        }
        Ok(())
    }
}

fn default_usage_interval() -> Dur {
    Dur(Duration::from_secs(300))
}
fn default_usage_retention() -> Dur {
    Dur(Duration::from_secs(400 * 86_400))
}
fn default_webhook_timeout() -> Dur {
    Dur(Duration::from_secs(5))
}
