//! Cluster modes (spec 3) and what they let through (spec 7). How usage moves a cluster
//! between normal, read-only and disabled is the overage ladder's (`policy::ladder`).
//!
//! [`decide`] order: provisioning/destroyed (404) before disabled (403) before a blocked
//! endpoint (501) before read-only/maintenance refusing updates (403). A cluster that does
//! not exist yet does not reveal which endpoints it would block.
//!
//! Must not touch: classification (takes a [`Class`]), I/O, the registry's storage.

use std::sync::Arc;

use crate::errors::EdgeError;
use crate::request::classify::Class;

/// Who put a cluster in a restrictive mode: the overage ladder (from metering readings)
/// lifts its own modes once usage is back under the plan; an operator's mode stays until an
/// operator changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetBy {
    Operator,
    Metering,
}

/// The mode of a cluster (spec 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Searches and updates are processed.
    Normal,
    /// Updates fail with 403 Cluster Read-only. When the overage ladder set it, deleting an
    /// index is allowed: it is how the customer clears the overage.
    ReadOnly(SetBy),
    /// Every request fails with 403 Cluster Disabled.
    Disabled(SetBy),
    /// Updates fail with 403 Maintenance (with `Retry-After`); searches succeed.
    Maintenance,
    /// Not provisioned yet: 404 Cluster Not Found.
    Provisioning,
    /// Deprovisioned: 404 Cluster Not Found.
    Destroyed,
}

/// A mode as requests meet it: the mode and, when an operator set it, their reason (shown
/// in the 403 body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeView {
    pub mode: Mode,
    pub reason: Option<Arc<str>>,
}

impl From<Mode> for ModeView {
    fn from(mode: Mode) -> Self {
        ModeView { mode, reason: None }
    }
}

impl From<crate::config::Mode> for Mode {
    /// A mode from the configuration file or registry: set by an operator.
    fn from(m: crate::config::Mode) -> Self {
        use crate::config::Mode as C;
        match m {
            C::Normal => Mode::Normal,
            C::ReadOnly => Mode::ReadOnly(SetBy::Operator),
            C::Disabled => Mode::Disabled(SetBy::Operator),
            C::Maintenance => Mode::Maintenance,
            C::Provisioning => Mode::Provisioning,
            C::Destroyed => Mode::Destroyed,
        }
    }
}

/// Whether a request of `class` may proceed in `mode` (a [`Mode`], or a [`ModeView`] with
/// the operator's reason), and if not, the error to answer.
pub fn decide(mode: impl Into<ModeView>, class: &Class) -> Result<(), EdgeError> {
    let ModeView { mode, reason } = mode.into();
    match mode {
        Mode::Provisioning | Mode::Destroyed => return Err(EdgeError::ClusterNotFound),
        Mode::Disabled(SetBy::Operator) => return Err(EdgeError::Disabled(reason)),
        Mode::Disabled(SetBy::Metering) => return Err(EdgeError::OverageDisabled(reason)),
        _ => {}
    }
    if let Class::NotImplemented(endpoint) = class {
        return Err(EdgeError::NotImplemented(endpoint.to_string()));
    }
    match (mode, class) {
        (_, Class::Read) | (Mode::Normal, _) => Ok(()),
        (Mode::ReadOnly(SetBy::Metering), Class::DeleteIndex) => Ok(()),
        (Mode::ReadOnly(SetBy::Metering), _) => Err(EdgeError::OverageReadOnly(reason)),
        (Mode::ReadOnly(SetBy::Operator), _) => Err(EdgeError::ReadOnly(reason)),
        (Mode::Maintenance, _) => Err(EdgeError::Maintenance(reason)),
        (Mode::Provisioning | Mode::Destroyed | Mode::Disabled(_), _) => {
            unreachable!("handled above")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn ni() -> Class {
        Class::NotImplemented(Cow::Borrowed("_snapshot"))
    }

    // spec 3 and 7: each mode with reads, updates, index deletion and blocked endpoints
    #[test]
    fn mode_by_class_table() {
        use EdgeError as E;
        use Mode::*;
        use SetBy::*;
        let ok = Ok(());
        let nf = Err(E::ClusterNotFound);
        let dis = Err(E::Disabled(None));
        let ro = Err(E::ReadOnly(None));
        let odis = Err(E::OverageDisabled(None));
        let oro = Err(E::OverageReadOnly(None));
        let mnt = Err(E::Maintenance(None));
        let n501 = Err(E::NotImplemented("_snapshot".into()));
        #[rustfmt::skip]
        let table: Vec<(Mode, [Result<(), EdgeError>; 4])> = vec![
            //                      Read          Update        DeleteIndex   NotImplemented
            (Normal,              [ok.clone(),  ok.clone(),  ok.clone(),  n501.clone()]),
            (ReadOnly(Operator),  [ok.clone(),  ro.clone(),  ro.clone(),  n501.clone()]),
            (ReadOnly(Metering),  [ok.clone(),  oro.clone(), ok.clone(),  n501.clone()]),
            (Disabled(Operator),  [dis.clone(), dis.clone(), dis.clone(), dis.clone()]),
            (Disabled(Metering),  [odis.clone(), odis.clone(), odis.clone(), odis.clone()]),
            (Maintenance,         [ok.clone(),  mnt.clone(), mnt.clone(), n501.clone()]),
            (Provisioning,        [nf.clone(),  nf.clone(),  nf.clone(),  nf.clone()]),
            (Destroyed,           [nf.clone(),  nf.clone(),  nf.clone(),  nf.clone()]),
        ];
        let classes = [Class::Read, Class::Update, Class::DeleteIndex, ni()];
        for (mode, expected) in table {
            for (class, want) in classes.iter().zip(expected) {
                assert_eq!(decide(mode, class), want, "{mode:?} {class:?}");
            }
        }
    }

    // spec 7: the statuses and the Retry-After of maintenance
    #[test]
    fn statuses() {
        let status = |m, c: &Class| decide(m, c).unwrap_err().status();
        assert_eq!(status(Mode::ReadOnly(SetBy::Operator), &Class::Update), 403);
        assert_eq!(status(Mode::Disabled(SetBy::Metering), &Class::Read), 403);
        assert_eq!(status(Mode::Maintenance, &Class::Update), 403);
        assert_eq!(status(Mode::Provisioning, &Class::Read), 404);
        assert_eq!(status(Mode::Destroyed, &Class::Update), 404);
        assert_eq!(status(Mode::Normal, &ni()), 501);
        let e = decide(Mode::Maintenance, &Class::Update).unwrap_err();
        assert!(e.headers().iter().any(|(k, _)| *k == "Retry-After"));
    }

    // spec 3, 7: the operator's reason reaches the 403 body, after the standard words
    #[test]
    fn the_operators_reason_is_in_the_refusal() {
        let why: Arc<str> = Arc::from("migrating data until 14:00 UTC");
        let view = |mode| ModeView {
            mode,
            reason: Some(why.clone()),
        };
        for (mode, start) in [
            (Mode::Maintenance, "Maintenance"),
            (Mode::ReadOnly(SetBy::Operator), "Cluster Read-only"),
            (Mode::Disabled(SetBy::Operator), "Cluster Disabled"),
        ] {
            let e = decide(view(mode), &Class::Update).unwrap_err();
            let v = e.body().to_value();
            let reason = v["error"]["reason"].as_str().unwrap();
            assert!(reason.starts_with(start), "{reason}");
            assert!(
                reason.contains("migrating data until 14:00 UTC"),
                "{reason}"
            );
            assert_eq!(v["error"]["mode_reason"], "migrating data until 14:00 UTC");
            assert_eq!(e.status(), 403);
        }
        assert_eq!(decide(view(Mode::Normal), &Class::Update), Ok(()));
    }

    // issue 32: each cause of a mode gets its own next step; an operator's read-only
    // never tells the customer to clear an overage they do not have
    #[test]
    fn the_refusal_names_the_next_step_of_its_cause() {
        let reason = |mode, class: &Class| {
            let v = decide(mode, class).unwrap_err().body().to_value();
            v["error"]["reason"].as_str().unwrap().to_string()
        };
        let operator_ro = reason(Mode::ReadOnly(SetBy::Operator), &Class::Update);
        assert!(!operator_ro.contains("overage"), "{operator_ro}");
        assert!(operator_ro.contains("operator"), "{operator_ro}");
        let operator_dis = reason(Mode::Disabled(SetBy::Operator), &Class::Read);
        assert!(!operator_dis.contains("overage"), "{operator_dis}");
        assert!(operator_dis.contains("operator"), "{operator_dis}");
        let ladder_ro = reason(Mode::ReadOnly(SetBy::Metering), &Class::Update);
        assert!(ladder_ro.contains("over its plan"), "{ladder_ro}");
        assert!(
            ladder_ro.contains("Delete indices or upgrade the plan"),
            "{ladder_ro}"
        );
        let ladder_dis = reason(Mode::Disabled(SetBy::Metering), &Class::Read);
        assert!(ladder_dis.contains("Upgrade the plan"), "{ladder_dis}");
        for r in [&operator_ro, &ladder_ro] {
            assert!(r.starts_with("Cluster Read-only: "), "{r}");
        }
    }

    #[test]
    fn configured_modes_are_operator_modes() {
        use crate::config::Mode as C;
        assert_eq!(Mode::from(C::ReadOnly), Mode::ReadOnly(SetBy::Operator));
        assert_eq!(Mode::from(C::Disabled), Mode::Disabled(SetBy::Operator));
        assert_eq!(Mode::from(C::Normal), Mode::Normal);
        assert_eq!(Mode::from(C::Maintenance), Mode::Maintenance);
        assert_eq!(Mode::from(C::Provisioning), Mode::Provisioning);
        assert_eq!(Mode::from(C::Destroyed), Mode::Destroyed);
    }
}
