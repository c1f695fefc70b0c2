//! Scripted model endpoint tests (library and `reel model serve`).
