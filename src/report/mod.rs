//! Reports: text, JSON envelope, JUnit, GitHub annotations.
