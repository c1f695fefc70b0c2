//! `rehash`: migrate legacy-hash cassettes to `jcs1`, with proof.
