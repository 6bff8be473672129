//! config (placeholder; see DESIGN.md)
