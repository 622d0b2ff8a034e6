//! Benchmarks of DockerSandbox (written below).
fn main() {}
