//! Every command's human (non-JSON) output on a `state:FILE.json` backend.

use super::support::Workspace;

#[test]
fn write_takes_bytes_from_stdin_without_file_and_with_dash() {
    let ws = Workspace::new();
    let run = ws.run_with_stdin(&["write", "/a.txt"], b"from stdin\n");
    run.assert_code(0);
    assert_eq!(run.out(), "wrote /a.txt (11 bytes)\n");
    ws.run_with_stdin(&["write", "b.txt", "-"], b"dash\n")
        .assert_code(0);
    assert_eq!(ws.run(&["cat", "/a.txt"]).stdout, b"from stdin\n");
    assert_eq!(ws.run(&["cat", "/b.txt"]).stdout, b"dash\n");
}

#[test]
fn write_takes_bytes_from_a_host_file() {
    let ws = Workspace::new();
    let host = ws.dir().join("input.bin");
    std::fs::write(&host, b"host bytes").unwrap();
    let run = ws.run(&["write", "/copy.bin", host.to_str().unwrap()]);
    run.assert_code(0);
    assert_eq!(run.out(), "wrote /copy.bin (10 bytes)\n");
    assert_eq!(ws.run(&["cat", "/copy.bin"]).stdout, b"host bytes");
}

#[test]
fn cat_is_byte_exact_for_binary_data() {
    let ws = Workspace::new();
    // Every byte value, twice, plus invalid UTF-8 sequences and CRLF.
    let mut bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    bytes.extend_from_slice(b"\xc3\x28\r\n\xff\xfe\x00");
    let host = ws.dir().join("blob.bin");
    std::fs::write(&host, &bytes).unwrap();
    ws.run(&["write", "/blob.bin", host.to_str().unwrap()])
        .assert_code(0);
    let run = ws.run(&["cat", "/blob.bin"]);
    run.assert_code(0);
    assert_eq!(run.stdout, bytes);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    // ... and from stdin too.
    ws.run_with_stdin(&["write", "/blob2.bin"], &bytes)
        .assert_code(0);
    assert_eq!(ws.run(&["cat", "/blob2.bin"]).stdout, bytes);
}

#[test]
fn ls_prints_long_lines_sorted_by_path() {
    let ws = Workspace::new();
    ws.put("/src/main.rs", "fn main() {}\n");
    ws.put("/README.md", "# hi\n");
    let run = ws.run(&["ls", "/"]);
    run.assert_code(0);
    let out = run.out();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    // KIND SIZE MODIFIED PATH
    let file: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(file[0], "-");
    assert_eq!(file[1], "5");
    assert!(file[2].contains('T'), "an RFC 3339 time: {}", file[2]);
    assert_eq!(file[3], "/README.md");
    let dir: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(dir[0], "d");
    assert_eq!(dir[1], "-");
    assert_eq!(dir[dir.len() - 1], "/src/");
    // ls with no PATH lists "/".
    assert_eq!(ws.run(&["ls"]).out(), out);
}

#[test]
fn ls_truncation_is_a_note_on_stderr() {
    let ws = Workspace::new();
    for name in ["/a", "/b", "/c"] {
        ws.put(name, "x");
    }
    let run = ws.run(&["ls", "/", "--limit", "2"]);
    run.assert_code(0);
    assert_eq!(run.out().lines().count(), 2);
    assert!(
        run.stderr.starts_with("burrow: note: truncated"),
        "{}",
        run.stderr
    );
    let full = ws.run(&["ls", "/", "--limit", "3"]);
    assert!(full.stderr.is_empty(), "{}", full.stderr);
}

#[test]
fn read_prints_numbered_lines_and_says_where_to_go_on() {
    let ws = Workspace::new();
    ws.put("/f.txt", "one\r\ntwo\nthree\n");
    let run = ws.run(&["read", "/f.txt"]);
    run.assert_code(0);
    assert_eq!(run.out(), "     1\tone\n     2\ttwo\n     3\tthree\n");
    assert!(run.stderr.is_empty());
    let run = ws.run(&["read", "/f.txt", "--offset", "1", "--limit", "1"]);
    run.assert_code(0);
    assert_eq!(run.out(), "     2\ttwo\n");
    assert!(run.stderr.contains("--offset 2"), "{}", run.stderr);
}

#[test]
fn read_of_an_empty_file_prints_nothing() {
    let ws = Workspace::new();
    ws.put("/empty", "");
    let run = ws.run(&["read", "/empty"]);
    run.assert_code(0);
    assert!(run.stdout.is_empty());
}

#[test]
fn edit_preserves_crlf_and_counts_replacements() {
    let ws = Workspace::new();
    ws.put("/w.txt", "alpha\r\nbeta\r\nalpha\r\n");
    let run = ws.run(&[
        "edit",
        "/w.txt",
        "--old",
        "alpha\nbeta",
        "--new",
        "alpha\nmid\nbeta",
    ]);
    run.assert_code(0);
    assert_eq!(run.out(), "edited /w.txt (1 occurrence replaced)\n");
    assert_eq!(
        ws.run(&["cat", "/w.txt"]).stdout,
        b"alpha\r\nmid\r\nbeta\r\nalpha\r\n"
    );
    let run = ws.run(&[
        "edit", "/w.txt", "--old", "alpha", "--new", "-omega", "--all",
    ]);
    run.assert_code(0);
    assert_eq!(run.out(), "edited /w.txt (2 occurrences replaced)\n");
    assert_eq!(
        ws.run(&["cat", "/w.txt"]).stdout,
        b"-omega\r\nmid\r\nbeta\r\n-omega\r\n"
    );
}

#[test]
fn rm_removes_a_file() {
    let ws = Workspace::new();
    ws.put("/gone.txt", "x");
    let run = ws.run(&["rm", "/gone.txt"]);
    run.assert_code(0);
    assert_eq!(run.out(), "removed /gone.txt\n");
    ws.run(&["cat", "/gone.txt"]).assert_code(1);
}

#[test]
fn glob_prints_one_path_a_line() {
    let ws = Workspace::new();
    ws.put("/a.py", "");
    ws.put("/pkg/b.py", "");
    ws.put("/pkg/c.rs", "");
    let run = ws.run(&["glob", "*.py"]);
    run.assert_code(0);
    assert_eq!(run.out(), "/a.py\n/pkg/b.py\n");
    let run = ws.run(&["glob", "*", "--under", "/pkg", "--limit", "1"]);
    assert_eq!(run.out(), "/pkg/b.py\n");
    assert!(run.stderr.contains("truncated"), "{}", run.stderr);
}

#[test]
fn grep_prints_path_line_text() {
    let ws = Workspace::new();
    ws.put("/a.py", "def one():\n    pass\ndef Two():\n");
    ws.put("/b.txt", "def not_python\n");
    ws.put("/c.py", "x = 1 + 2\n");
    let run = ws.run(&["grep", r"def \w+", "--include", "*.py"]);
    run.assert_code(0);
    assert_eq!(run.out(), "/a.py:1:def one():\n/a.py:3:def Two():\n");
    let run = ws.run(&["grep", "two", "-i"]);
    assert_eq!(run.out(), "/a.py:3:def Two():\n");
    let run = ws.run(&["grep", "1 + 2", "--fixed"]);
    assert_eq!(run.out(), "/c.py:1:x = 1 + 2\n");
    let run = ws.run(&["grep", "def", "--under", "/b.txt"]);
    assert_eq!(run.out(), "/b.txt:1:def not_python\n");
    let run = ws.run(&["grep", "def", "--limit", "1"]);
    assert_eq!(run.out(), "/a.py:1:def one():\n");
    assert!(run.stderr.contains("truncated"), "{}", run.stderr);
}

#[test]
fn exec_is_refused_on_a_backend_that_is_not_a_sandbox() {
    let ws = Workspace::new();
    let run = ws.run(&["exec", "echo hi", "--timeout", "5"]);
    run.assert_code(1);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr
            .starts_with("burrow: this backend does not support running commands"),
        "{}",
        run.stderr
    );
}

#[test]
fn tenant_is_accepted_anywhere_on_the_line() {
    let ws = Workspace::new();
    ws.put("/t.txt", "x\n");
    ws.run(&["--tenant", "team-a", "read", "/t.txt"])
        .assert_code(0);
    ws.run(&["read", "/t.txt", "--tenant", "team-a", "--json"])
        .assert_code(0);
}

/// A state file keeps files only: `mkdir` is refused saying why and what to do instead,
/// nothing is written, and `rm -r` removes a tree.
#[test]
fn mkdir_on_a_state_file_is_refused_clearly_and_rm_r_removes_a_tree() {
    let ws = Workspace::new();
    ws.put("/t/a.txt", "a\n");
    ws.put("/t/sub/b.txt", "b\n");
    let before = std::fs::read(&ws.state).unwrap();
    for args in [
        &["--json", "mkdir", "/m"][..],
        &["--json", "mkdir", "-p", "/m/n"],
    ] {
        let message = ws.run(args).assert_json_error(1, "unsupported");
        assert!(message.contains("state file keeps files only"), "{message}");
        assert!(message.contains("write a file beneath it"), "{message}");
    }
    assert_eq!(std::fs::read(&ws.state).unwrap(), before);
    let run = ws.run(&["mkdir", "/m"]);
    run.assert_code(1);
    assert_eq!(run.out(), "");
    assert_eq!(ws.run(&["rm", "-r", "/t"]).out(), "removed /t\n");
    ws.run(&["--json", "ls", "/t"])
        .assert_json_error(1, "not_found");
}
