//! One cluster, one allowance, across a fleet of edge nodes (issue 27; docs/fleet.md).
//!
//! Each cluster has a home node, chosen by rendezvous hashing ([`rendezvous`]) over the
//! live nodes the store lists ([`membership`]: the view and the pure choice of a home;
//! [`beat`]: the thread that renews this node's registration and reads the others'). Only
//! the home admits: the other nodes ask it for a permit over the peer protocol
//! ([`wire`]: the handshake and messages, no I/O; [`home`]: the peer listener, which
//! decides on the cluster's one [`crate::policy::admit::Allowance`]; [`handover`]: a
//! joining node takes its clusters only as the old homes' requests end). The requester's
//! side runs on the edge's workers (`edge::peer`).
//!
//! Must not touch: the request path (the edge calls in), the catalog (read from the
//! registry), the plane's store connection.

pub mod beat;
pub mod counted;
pub mod handover;
pub mod home;
pub mod membership;
pub mod orphans;
pub mod outstanding;
pub mod places;
pub mod rendezvous;
pub mod wire;
