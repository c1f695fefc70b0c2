//! `record`: run a scenario against a real agent and write a cassette.
