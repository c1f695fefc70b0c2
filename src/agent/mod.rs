//! The agent process and the stream-json control protocol.
