//! cargo xtask: project automation (placeholder until the xtask commands land).
fn main() {}
