//! The scripted model endpoint: an Anthropic Messages API on loopback.
