//! The simulator (in progress).
