//! `replay`: re-evaluate a cassette against its frozen recording.
