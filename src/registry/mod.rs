//! registry (placeholder; see DESIGN.md)
