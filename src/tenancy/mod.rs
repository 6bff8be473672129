//! tenancy (placeholder; see DESIGN.md)
