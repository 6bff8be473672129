//! metrics (placeholder; see DESIGN.md)
