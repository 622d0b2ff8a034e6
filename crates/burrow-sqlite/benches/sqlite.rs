//! Benchmarks of the SQLite store (filled in below).
fn main() {}
