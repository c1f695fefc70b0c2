//! `verify-cassettes`: privacy scan and staleness gate for committed cassettes.
