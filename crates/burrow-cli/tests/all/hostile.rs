//! Hostile input through the binary, as one table: each case's input, arguments, exit code and what stdout/stderr must (and must not) hold.

use std::fs::File;
use std::io::Write;
use std::process::{Command, Stdio};

use super::support::Workspace;

/// What a case feeds on stdin.
enum Input {
    /// These bytes.
    Bytes(&'static [u8]),
    /// Bytes built at run time (too long to write out).
    Built(fn() -> Vec<u8>),
    /// /dev/zero: endless.
    Zeros,
}

struct Case {
    what: &'static str,
    args: &'static [&'static str],
    input: Input,
    code: i32,
    /// Fragments stdout must hold.
    out: &'static [&'static str],
    /// Fragments stderr must hold.
    err: &'static [&'static str],
    /// Fragments neither may hold.
    never: &'static [&'static str],
}

/// The files every case starts with: names holding a newline and an escape sequence.
const SEED: &str = concat!(
    r#"{"op": "write", "path": "/a\nb", "content": "x\n"}"#,
    "\n",
    r#"{"op": "write", "path": "/esc\u001b[31mred", "content": "needle\n"}"#,
    "\n",
    r#"{"op": "write", "path": "/plain.txt", "content": "needle\nneedle\n"}"#,
    "\n",
);

/// The MCP handshake before a hostile line.
const MCP_INIT: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
);

fn mcp_with(line: &str) -> Vec<u8> {
    format!("{MCP_INIT}{line}\n").into_bytes()
}

const CASES: &[Case] = &[
    Case {
        what: "ls quotes a name with a newline and an escape",
        args: &["ls", "/"],
        input: Input::Bytes(b""),
        code: 0,
        out: &["\"/a\\nb\"\n", "\"/esc\\u{1b}[31mred\"\n", " /plain.txt\n"],
        err: &[],
        never: &["\u{1b}", "/a\nb"],
    },
    Case {
        what: "glob quotes names",
        args: &["glob", "*"],
        input: Input::Bytes(b""),
        code: 0,
        out: &["\"/a\\nb\"\n\"/esc\\u{1b}[31mred\"\n/plain.txt\n"],
        err: &[],
        never: &["\u{1b}"],
    },
    Case {
        what: "grep quotes the path",
        args: &["grep", "needle", "--include", "esc*"],
        input: Input::Bytes(b""),
        code: 0,
        out: &["\"/esc\\u{1b}[31mred\":1:needle\n"],
        err: &[],
        never: &["\u{1b}"],
    },
    Case {
        what: "a refusal escapes the path it names",
        args: &["read", "/nope\u{1b}[2J"],
        input: Input::Bytes(b""),
        code: 1,
        out: &[],
        err: &["/nope\\u{1b}[2J"],
        never: &["\u{1b}"],
    },
    Case {
        what: "removing a quoted name says it quoted",
        args: &["rm", "/a\nb"],
        input: Input::Bytes(b""),
        code: 0,
        out: &["removed \"/a\\nb\"\n"],
        err: &[],
        never: &["/a\nb"],
    },
    Case {
        what: "ls --json says truncated on stdout",
        args: &["--json", "ls", "--limit", "1"],
        input: Input::Bytes(b""),
        code: 0,
        out: &["\"truncated\":true"],
        err: &[],
        never: &["note"],
    },
    Case {
        what: "grep --json says truncated on stdout",
        args: &["--json", "grep", "needle", "--limit", "1"],
        input: Input::Bytes(b""),
        code: 0,
        out: &["{\"matches\":[", "\"truncated\":true}"],
        err: &[],
        never: &["note"],
    },
    Case {
        what: "write from /dev/zero as FILE is refused, not read whole",
        args: &["write", "/z", "/dev/zero"],
        input: Input::Bytes(b""),
        code: 1,
        out: &[],
        err: &["larger than the largest file this backend takes"],
        never: &[],
    },
    Case {
        what: "write from an endless stdin is refused",
        args: &["--json", "write", "/z"],
        input: Input::Zeros,
        code: 1,
        out: &["\"kind\":\"too_large\""],
        err: &[],
        never: &[],
    },
    Case {
        what: "a batch line missing a field names the op and the field",
        args: &["batch"],
        input: Input::Bytes(b"{\"op\": \"read\"}\n"),
        code: 1,
        out: &["line 1: read needs the field `path`"],
        err: &[],
        never: &["internally tagged", "enum Line"],
    },
    Case {
        what: "a batch line with a mistyped field names it",
        args: &["batch"],
        input: Input::Bytes(b"{\"op\": \"ls\", \"limit\": \"ten\"}\n"),
        code: 1,
        out: &["line 1: ls: ", "limit"],
        err: &[],
        never: &["internally tagged", "enum Line"],
    },
    Case {
        what: "a batch line with an unknown op lists the ops",
        args: &["batch"],
        input: Input::Bytes(b"{\"op\": \"copy\"}\n"),
        code: 1,
        out: &["line 1: unknown op \\\"copy\\\"", "ls, read, cat"],
        err: &[],
        never: &["internally tagged", "enum Line"],
    },
    Case {
        what: "a batch line longer than any operation needs is skipped, not held",
        args: &["batch"],
        input: Input::Built(|| {
            let mut input = vec![b'a'; 62 << 20];
            input.extend_from_slice(b"\n{\"op\": \"ls\"}\n");
            input
        }),
        code: 1,
        out: &["line 1: longer than", "\"entries\":["],
        err: &[],
        never: &[],
    },
    Case {
        what: "null means absent in a batch line: under",
        args: &["batch"],
        input: Input::Bytes(
            b"{\"op\": \"grep\", \"pattern\": \"needle\", \"under\": null, \"include\": null, \"limit\": null}\n",
        ),
        code: 0,
        out: &["\"matches\":[", "\"/plain.txt\""],
        err: &[],
        never: &["error"],
    },
    Case {
        what: "exec --timeout 0 is refused as invalid_argument",
        args: &["--json", "exec", "true", "--timeout", "0"],
        input: Input::Bytes(b""),
        code: 1,
        out: &["\"kind\":\"invalid_argument\"", "at least 1 second"],
        err: &[],
        never: &[],
    },
    Case {
        what: "batch exec timeout 0 is refused the same way",
        args: &["batch"],
        input: Input::Bytes(b"{\"op\": \"exec\", \"command\": \"true\", \"timeout\": 0}\n"),
        code: 1,
        out: &["\"kind\":\"invalid_argument\"", "at least 1 second"],
        err: &[],
        never: &[],
    },
    Case {
        what: "a huge exec timeout is refused, never overflows",
        args: &["--json", "exec", "true", "--timeout", "18446744073709551615"],
        input: Input::Bytes(b""),
        code: 1,
        out: &["\"kind\":\"invalid_argument\"", "at most"],
        err: &[],
        never: &["panicked"],
    },
    Case {
        what: "mcp: a line that is not JSON gets a parse error",
        args: &["mcp"],
        input: Input::Built(|| mcp_with("not json")),
        code: 0,
        out: &["\"id\":null", "-32700"],
        err: &[],
        never: &[],
    },
    Case {
        what: "mcp: two objects on one line get a parse error",
        args: &["mcp"],
        input: Input::Built(|| mcp_with(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}{"jsonrpc":"2.0","id":8,"method":"ping"}"#)),
        code: 0,
        out: &["-32700"],
        err: &[],
        never: &["\"id\":7", "\"id\":8"],
    },
    Case {
        what: "mcp: 1e400 gets a parse error",
        args: &["mcp"],
        input: Input::Built(|| mcp_with(r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#)),
        code: 0,
        out: &["-32700"],
        err: &[],
        never: &[],
    },
    Case {
        what: "mcp: 5000-deep nesting gets a parse error",
        args: &["mcp"],
        input: Input::Built(|| {
            mcp_with(&format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"ping","params":{{"x":{}{}}}}}"#,
                "[".repeat(5000),
                "]".repeat(5000)
            ))
        }),
        code: 0,
        out: &["-32700"],
        err: &[],
        never: &[],
    },
    Case {
        what: "mcp: a line over 16 MiB gets an error",
        args: &["mcp"],
        input: Input::Built(|| {
            let mut input = MCP_INIT.as_bytes().to_vec();
            input.extend(std::iter::repeat_n(b'a', 17 << 20));
            input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n");
            input
        }),
        code: 0,
        out: &["-32700", "longer than 16777216 bytes", "\"id\":9,\"result\":{}"],
        err: &[],
        never: &[],
    },
    Case {
        what: "mcp: a request whose id is null gets -32600 with id null, and the next is answered",
        args: &["mcp"],
        input: Input::Built(|| {
            mcp_with(concat!(
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":11,"method":"ping"}"#
            ))
        }),
        code: 0,
        out: &[
            "\"id\":null", "-32600",
            r#""id":11,"result":{}"#,
        ],
        err: &[],
        never: &[],
    },
    Case {
        what: "mcp: a request whose id is an object gets -32600 with id null",
        args: &["mcp"],
        input: Input::Built(|| mcp_with(r#"{"jsonrpc":"2.0","id":{"n":1},"method":"tools/list"}"#)),
        code: 0,
        out: &["\"id\":null", "-32600", "must be a string or an integer"],
        err: &[],
        never: &["\"n\":1"],
    },
    Case {
        what: "mcp: a request whose id is a boolean gets -32600 with id null",
        args: &["mcp"],
        input: Input::Built(|| mcp_with(r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#)),
        code: 0,
        out: &["\"id\":null", "-32600"],
        err: &[],
        never: &["\"id\":true"],
    },
    Case {
        what: "mcp: tools/call without params is invalid params",
        args: &["mcp"],
        input: Input::Built(|| mcp_with(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#)),
        code: 0,
        out: &["\"id\":5", "-32602"],
        err: &[],
        never: &["-32601"],
    },
    Case {
        what: "mcp: tools/call with a mistyped name is invalid params",
        args: &["mcp"],
        input: Input::Built(|| {
            mcp_with(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":5}}"#)
        }),
        code: 0,
        out: &["\"id\":6", "-32602"],
        err: &[],
        never: &["-32601"],
    },
];

fn run(ws: &Workspace, case: &Case) -> (i32, String, String) {
    let spec = ws.spec();
    let mut args = vec!["--backend", spec.as_str()];
    args.extend_from_slice(case.args);
    let mut command = Command::new(env!("CARGO_BIN_EXE_burrow"));
    command
        .args(&args)
        .current_dir(ws.dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let bytes = match &case.input {
        Input::Zeros => {
            command.stdin(File::open("/dev/zero").unwrap());
            None
        }
        Input::Bytes(bytes) => Some(bytes.to_vec()),
        Input::Built(build) => Some(build()),
    };
    if bytes.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command.spawn().unwrap();
    let feeder = bytes.map(|bytes| {
        let mut pipe = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        })
    });
    let output = child.wait_with_output().unwrap();
    if let Some(feeder) = feeder {
        feeder.join().unwrap();
    }
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn hostile_cases() {
    let mut failures = Vec::new();
    for case in CASES {
        let ws = Workspace::new();
        ws.run_with_stdin(&["batch"], SEED.as_bytes())
            .assert_code(0);
        let (code, out, err) = run(&ws, case);
        let mut wrong = Vec::new();
        if code != case.code {
            wrong.push(format!("exit code {code}, expected {}", case.code));
        }
        for fragment in case.out {
            if !out.contains(fragment) {
                wrong.push(format!("stdout lacks {fragment:?}"));
            }
        }
        for fragment in case.err {
            if !err.contains(fragment) {
                wrong.push(format!("stderr lacks {fragment:?}"));
            }
        }
        for fragment in case.never {
            if out.contains(fragment) || err.contains(fragment) {
                wrong.push(format!("output holds {fragment:?}"));
            }
        }
        if !wrong.is_empty() {
            let cut = |s: &str| s.chars().take(600).collect::<String>();
            failures.push(format!(
                "{}: {}\n  stdout: {:?}\n  stderr: {:?}",
                case.what,
                wrong.join("; "),
                cut(&out),
                cut(&err)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
