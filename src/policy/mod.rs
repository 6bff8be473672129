//! policy (placeholder; see DESIGN.md)
