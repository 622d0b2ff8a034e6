//! Quickstart: the burrow file contract on the embedded default backend (StateBackend), step by step.
//!
//! Run it with `cargo run -p burrow-agent --example quickstart`. It needs nothing
//! but the crate: the StateBackend keeps the files in memory.

use burrow_agent::{Backend, Error, FileContext, GrepQuery, StateBackend, VPath};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // Every operation takes a context (who is asking) and parsed paths.
    let backend = StateBackend::new();
    let ctx = FileContext::default();

    step(
        1,
        "write a few files (parent directories appear on their own)",
    );
    let files = [
        ("/README.md", "# demo\n\nA tiny project.\n"),
        (
            "/src/main.rs",
            "fn main() {\n    println!(\"{}\", greet(\"burrow\"));\n}\n",
        ),
        (
            "/src/lib.rs",
            "pub fn greet(name: &str) -> String {\n    format!(\"hello, {name}\")\n}\n",
        ),
        ("/docs/guide.md", "# Guide\n\nRead the README first.\n"),
    ];
    for (path, text) in files {
        let written = backend.write(&ctx, &VPath::parse(path)?, text).await?;
        println!("  wrote {:<16} ({} bytes)", show(&written.path), text.len());
    }

    step(
        2,
        "edit a file with Windows line endings: CRLF is preserved",
    );
    let notes = VPath::parse("/notes.txt")?;
    backend
        .write(&ctx, &notes, "first line\r\nsecond line\r\n")
        .await?;
    println!(
        "  before: {:?}",
        bytes_as_text(&backend, &ctx, &notes).await?
    );
    // `old` and `new` use "\n"; in a CRLF file that matches and writes "\r\n".
    let edited = backend
        .edit(
            &ctx,
            &notes,
            "first line\nsecond",
            "first line\ninserted line\nsecond",
            false,
        )
        .await?;
    println!(
        "  edit({}) replaced {} occurrence(s)",
        show(&edited.path),
        edited.occurrences.unwrap_or(0)
    );
    println!(
        "  after:  {:?}",
        bytes_as_text(&backend, &ctx, &notes).await?
    );

    step(
        3,
        "grep: a Rust regex over every text file, path order then line order",
    );
    let query = GrepQuery::regex(r"fn \w+").with_include("*.rs");
    let found = backend.grep(&ctx, &query, &VPath::root(), 100).await?;
    for m in &found.matches {
        println!("  {}:{}:{}", m.path, m.line_number, m.line);
    }

    step(
        4,
        "glob: `*.md` has no \"/\", so it matches the file name at any depth",
    );
    let globbed = backend.glob(&ctx, "*.md", &VPath::root(), 100).await?;
    for f in &globbed.files {
        println!("  {}", f.path);
    }

    step(
        5,
        "ls: the entries directly beneath a directory, sorted by path",
    );
    let listing = backend.ls(&ctx, &VPath::root(), 100).await?;
    for e in &listing.entries {
        match e.size {
            Some(size) if !e.is_dir => println!("  file {:>5} bytes  {}", size, e.path),
            _ => println!("  dir              {}/", e.path),
        }
    }

    step(
        6,
        "read: a window of numbered lines, plus the total line count",
    );
    let window = backend
        .read(&ctx, &VPath::parse("/src/lib.rs")?, 0, 2)
        .await?;
    for (i, line) in window.lines.iter().enumerate() {
        println!("  {:>6}\t{line}", window.offset + i + 1);
    }
    println!(
        "  (lines {}-{} of {}, truncated: {})",
        window.offset + 1,
        window.offset + window.lines.len(),
        window.total_lines,
        window.truncated
    );

    step(
        7,
        "refusals: the caller asked for something the contract does not allow",
    );
    // A path that climbs above "/" is refused before any backend sees it.
    match VPath::parse("../etc/passwd") {
        Ok(path) => println!("  unexpected: parsed as {path}"),
        Err(e) => report(&e),
    }
    // A backend refuses too, with a kind to match on and one sentence to show.
    match backend
        .read(&ctx, &VPath::parse("/missing.txt")?, 0, 10)
        .await
    {
        Ok(_) => println!("  unexpected: /missing.txt was read"),
        Err(e) => report(&e),
    }
    // An ambiguous edit changes nothing and says how many occurrences it saw.
    let main_rs = VPath::parse("/src/main.rs")?;
    match backend.edit(&ctx, &main_rs, "(", "[", false).await {
        Ok(_) => println!("  unexpected: the edit applied"),
        Err(e) => report(&e),
    }
    Ok(())
}

/// Prints a numbered step heading.
fn step(n: u32, what: &str) {
    println!("\n{n}. {what}");
}

/// Prints a refusal (or failure) as a tool would hand it back to a model.
fn report(e: &Error) {
    let class = if e.is_refusal() { "refusal" } else { "failure" };
    println!("  {class}: kind={} message={:?}", e.kind(), e.message());
}

/// The path a write or edit reports, or "?" when it reports none.
fn show(path: &Option<String>) -> &str {
    path.as_deref().unwrap_or("?")
}

/// The exact bytes of a file, shown as text so "\r\n" is visible in `{:?}`.
async fn bytes_as_text(
    backend: &StateBackend,
    ctx: &FileContext,
    path: &VPath,
) -> Result<String, Error> {
    let bytes = backend.read_bytes(ctx, path).await?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
