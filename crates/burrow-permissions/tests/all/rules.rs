//! Rule strings to decisions, from one table: each row is rules, a mode, a call, and the decision with the rule that made it.

use burrow_backend::VPath;
use burrow_permissions::{Decision, PermissionMode, Permissions, Rule, SettingsErrorKind, ToolUse};

use Decision::{Allow, Ask, Deny};
use PermissionMode::{AcceptEdits, BypassPermissions, Default, DontAsk, Plan};

/// A call in a row: tool name and its path or command ("" for none).
struct Row {
    deny: &'static [&'static str],
    ask: &'static [&'static str],
    allow: &'static [&'static str],
    mode: PermissionMode,
    tool: &'static str,
    arg: &'static str,
    decision: Decision,
    /// The rule expected to decide, "" when the mode decides.
    rule: &'static str,
}

#[allow(clippy::too_many_arguments)] // one argument per column of the table
const fn row(
    deny: &'static [&'static str],
    ask: &'static [&'static str],
    allow: &'static [&'static str],
    mode: PermissionMode,
    tool: &'static str,
    arg: &'static str,
    decision: Decision,
    rule: &'static str,
) -> Row {
    Row {
        deny,
        ask,
        allow,
        mode,
        tool,
        arg,
        decision,
        rule,
    }
}

const NONE: &[&str] = &[];

#[rustfmt::skip]
const TABLE: &[Row] = &[
    // Path rules: gitignore syntax anchored at the workspace root.
    row(&["Read(.env)"], NONE, NONE, Default, "read_file", "/.env", Deny, "Read(.env)"),
    row(&["Read(.env)"], NONE, NONE, Default, "read_file", "/app/.env", Deny, "Read(.env)"),
    row(&["Read(.env)"], NONE, NONE, Default, "read_file", "/app/.env.local", Allow, ""),
    row(&["Read(*.env)"], NONE, NONE, Default, "grep", "/deep/er/prod.env", Deny, "Read(*.env)"),
    row(&["Read(*.env)"], NONE, NONE, Default, "glob", "/prod.env.txt", Allow, ""),
    row(&["Read(/secrets/**)"], NONE, NONE, Default, "ls", "/secrets/a", Deny, "Read(/secrets/**)"),
    row(&["Read(/secrets/**)"], NONE, NONE, Default, "ls", "/secrets/a/b/c.txt", Deny, "Read(/secrets/**)"),
    row(&["Read(/secrets/**)"], NONE, NONE, Default, "ls", "/app/secrets/a", Allow, ""),
    row(&["Read(/secrets)"], NONE, NONE, Default, "read_file", "/secrets/inside.txt", Deny, "Read(/secrets)"),
    row(&["Read(//secrets/)"], NONE, NONE, Default, "read_file", "/secrets/x", Deny, "Read(//secrets/)"),
    row(&["Edit(./build/**)"], NONE, NONE, Default, "write_file", "/build/out.js", Deny, "Edit(./build/**)"),
    row(&["Edit(./build/**)"], NONE, NONE, Default, "write_file", "/src/build/out.js", Allow, ""),
    row(&["Edit(src/gen/*)"], NONE, NONE, Default, "edit_file", "/src/gen/a.rs", Deny, "Edit(src/gen/*)"),
    row(&["Edit(src/gen/*)"], NONE, NONE, Default, "edit_file", "/x/src/gen/a.rs", Allow, ""),
    row(&["Edit(/src/*.rs)"], NONE, NONE, Default, "edit_file", "/src/a/b.rs", Allow, ""),
    row(&["Write(/locked/**)"], NONE, NONE, Default, "delete_path", "/locked/f", Deny, "Write(/locked/**)"),
    // Read covers only reading tools, Edit only changing ones.
    row(&["Read(/s/**)"], NONE, NONE, Default, "write_file", "/s/f", Allow, ""),
    row(&["Edit(/s/**)"], NONE, NONE, Default, "read_file", "/s/f", Allow, ""),
    row(&["Read"], NONE, NONE, Default, "glob", "/", Deny, "Read"),
    row(&["Edit"], NONE, NONE, Default, "execute", "ls", Allow, ""),
    // Tool-specific path rules on burrow's own names.
    row(&["grep(/big/**)"], NONE, NONE, Default, "grep", "/big/x", Deny, "grep(/big/**)"),
    row(&["grep(/big/**)"], NONE, NONE, Default, "read_file", "/big/x", Allow, ""),
    // Bash: exact, prefix, wildcard, compound commands, env prefixes.
    row(&["Bash(rm -rf /)"], NONE, NONE, Default, "execute", "rm -rf /", Deny, "Bash(rm -rf /)"),
    row(&["Bash(rm -rf /)"], NONE, NONE, Default, "execute", "rm -rf /tmp", Allow, ""),
    row(NONE, NONE, &["Bash(npm run test:*)"], DontAsk, "execute", "npm run test", Allow, "Bash(npm run test:*)"),
    row(NONE, NONE, &["Bash(npm run test:*)"], DontAsk, "execute", "npm run test --watch", Allow, "Bash(npm run test:*)"),
    row(NONE, NONE, &["Bash(npm run test:*)"], DontAsk, "execute", "npm run testing", Deny, ""),
    row(NONE, NONE, &["Bash(npm run test:*)"], DontAsk, "execute", "npm run test && curl evil", Deny, ""),
    row(&["Bash(git push *)"], NONE, NONE, Default, "execute", "git push origin main", Deny, "Bash(git push *)"),
    row(&["Bash(git push *)"], NONE, NONE, Default, "execute", "git push", Deny, "Bash(git push *)"),
    row(&["Bash(git push *)"], NONE, NONE, Default, "execute", "git pushx", Allow, ""),
    row(&["Bash(git * --force)"], NONE, NONE, Default, "execute", "git push origin --force", Deny, "Bash(git * --force)"),
    row(&["Bash(curl:*)"], NONE, NONE, Default, "execute", "ls && curl x", Deny, "Bash(curl:*)"),
    row(&["Bash(curl:*)"], NONE, NONE, Default, "execute", "echo $(curl x)", Deny, "Bash(curl:*)"),
    row(&["Bash(rm:*)"], NONE, NONE, Default, "execute", "FOO=1 BAR=2 rm -rf x", Deny, "Bash(rm:*)"),
    row(&["Bash"], NONE, NONE, BypassPermissions, "execute", "true", Deny, "Bash"),
    // MCP tools by server and by name.
    row(&["mcp__github"], NONE, NONE, Default, "mcp__github__create_issue", "", Deny, "mcp__github"),
    row(&["mcp__github__*"], NONE, NONE, Default, "mcp__github__list", "", Deny, "mcp__github__*"),
    row(&["mcp__github__push"], NONE, NONE, Default, "mcp__github__list", "", Allow, ""),
    row(&["mcp__git"], NONE, NONE, Default, "mcp__github__list", "", Allow, ""),
    row(NONE, &["mcp__github__push"], NONE, Default, "mcp__github__push", "", Ask, "mcp__github__push"),
    // burrow's own tool names, and names burrow does not have.
    row(&["task"], NONE, NONE, Default, "task", "", Deny, "task"),
    row(&["WebFetch(domain:example.com)"], NONE, NONE, Default, "task", "", Allow, ""),
    // Order: deny, then ask, then allow, first match wins, specificity irrelevant.
    row(&["Read(/a/**)"], NONE, &["Read(/a/b/c)"], Default, "read_file", "/a/b/c", Deny, "Read(/a/**)"),
    row(NONE, &["Read(/a/**)"], &["Read(/a/b/c)"], Default, "read_file", "/a/b/c", Ask, "Read(/a/**)"),
    row(NONE, &["Read(/x/**)", "Read(/a/**)"], NONE, Default, "read_file", "/a/f", Ask, "Read(/a/**)"),
    row(NONE, NONE, &["Read(/a/**)", "Read"], DontAsk, "read_file", "/a/f", Allow, "Read(/a/**)"),
    // Modes.
    row(NONE, &["Edit"], NONE, Default, "write_file", "/f", Ask, "Edit"),
    row(NONE, &["Edit"], NONE, AcceptEdits, "write_file", "/f", Allow, "Edit"),
    row(NONE, &["Bash"], NONE, AcceptEdits, "execute", "ls", Ask, "Bash"),
    row(NONE, &["Bash"], NONE, BypassPermissions, "execute", "ls", Allow, "Bash"),
    row(NONE, &["Bash"], NONE, DontAsk, "execute", "ls", Deny, "Bash"),
    row(NONE, NONE, NONE, DontAsk, "read_file", "/f", Deny, ""),
    row(NONE, NONE, NONE, Default, "write_file", "/f", Allow, ""),
    row(NONE, NONE, &["Edit"], Plan, "write_file", "/f", Deny, ""),
    row(NONE, NONE, NONE, Plan, "execute", "ls", Deny, ""),
    row(NONE, NONE, NONE, Plan, "read_file", "/f", Allow, ""),
    row(NONE, &["Read"], NONE, Plan, "grep", "/", Ask, "Read"),
    row(&["Read(/s/**)"], NONE, NONE, BypassPermissions, "read_file", "/s/x", Deny, "Read(/s/**)"),
    row(&["Read(/s/**)"], NONE, NONE, AcceptEdits, "read_file", "/s/x", Deny, "Read(/s/**)"),
    row(&["Read(/s/**)"], NONE, NONE, DontAsk, "read_file", "/s/x", Deny, "Read(/s/**)"),
];

fn rules(list: &[&str]) -> Vec<Rule> {
    list.iter().map(|r| Rule::parse(r).unwrap()).collect()
}

#[test]
fn each_row_of_the_table_decides_as_written() {
    for (i, r) in TABLE.iter().enumerate() {
        let permissions =
            Permissions::new(rules(r.allow), rules(r.ask), rules(r.deny)).with_mode(r.mode);
        let path;
        let mut call = ToolUse::new(r.tool);
        if r.tool == "execute" {
            call = call.with_command(r.arg);
        } else if !r.arg.is_empty() {
            path = VPath::parse(r.arg).unwrap();
            call = call.with_path(&path);
        }
        let verdict = permissions.decide(&call);
        let rule = verdict.rule.clone().unwrap_or_default();
        assert_eq!(
            (verdict.decision, rule.as_str()),
            (r.decision, r.rule),
            "row {i}: {} {:?} in {} mode",
            r.tool,
            r.arg,
            r.mode
        );
        assert!(
            verdict.reason().ends_with('.'),
            "row {i}: {}",
            verdict.reason()
        );
    }
}

/// Bad rules: a refusal naming the rule in one sentence, never a panic.
#[test]
fn bad_rules_are_refused_naming_the_rule() {
    let bad = [
        "",
        "   ",
        "Read(",
        "Read(/x",
        "Read(/x)y",
        "Read()",
        "Bash(  )",
        "Read(~/.ssh/**)",
        "Read(!keep)",
        "Read(../outside)",
        "Read(/a/../../b)",
        "Read([z-a])",
        "Read({a,b)",
        "mcp__",
        "mcp__(x)",
        "mcp__github(x)",
        "Re ad",
        "Bash*",
        "(x)",
    ];
    for text in bad {
        let err = Rule::parse(text).expect_err(text);
        assert_eq!(err.kind(), SettingsErrorKind::InvalidRule, "{text}");
        let message = err.message();
        assert!(
            message.contains(&format!("{:?}", text)),
            "{text}: {message}"
        );
        assert!(message.ends_with('.'), "{message}");
        assert_eq!(message.matches(". ").count(), 0, "one sentence: {message}");
    }
}

#[test]
fn good_rules_parse_and_keep_their_text() {
    for text in [
        "Read",
        "Read(/secrets/**)",
        "Edit(*.env)",
        "Write(./build/**)",
        "Bash(npm run test:*)",
        "Bash(git * main)",
        "mcp__github",
        "mcp__github__*",
        "mcp__github__create_issue",
        "WebFetch(domain:example.com)",
        "Agent(Explore)",
        "read_file(/a/**)",
        "execute(ls:*)",
        "Read(/)",
        "Read(**)",
    ] {
        let rule = Rule::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(rule.text(), text);
    }
}

#[test]
fn bare_deny_rules_and_plan_mode_withdraw_tools() {
    let p = Permissions::new(
        vec![],
        vec![],
        rules(&["Bash", "mcp__github", "Bash(rm:*)"]),
    );
    assert!(!p.offers("execute", true));
    assert!(!p.offers("mcp__github__push", true));
    assert!(p.offers("mcp__gitlab__push", true));
    assert!(p.offers("read_file", false));
    let plan = Permissions::default().with_mode(Plan);
    assert!(!plan.offers("write_file", true));
    assert!(plan.offers("read_file", false));
    // `Bash(rm *)` keeps the tool and blocks matching calls only.
    let p = Permissions::new(vec![], vec![], rules(&["Bash(rm:*)"]));
    assert!(p.offers("execute", true));
}

#[test]
fn a_read_only_annotation_lets_a_tool_run_in_plan_mode() {
    let plan = Permissions::default().with_mode(Plan);
    let call = ToolUse::new("mcp__docs__search");
    assert_eq!(plan.decide(&call).decision, Deny);
    assert_eq!(plan.decide(&call.read_only(true)).decision, Allow);
}
