//! The command line as clap sees it: global options and one subcommand per operation.

use std::path::PathBuf;

use burrow::DEFAULT_TENANT;
use clap::{Parser, Subcommand};

use crate::op::{DEFAULT_LIST_LIMIT, DEFAULT_MATCH_LIMIT, DEFAULT_READ_LIMIT};
use crate::spec::BackendArg;

/// Drive a burrow backend from the shell: inspect and change the files an agent left behind.
///
/// Exit codes: 0 success; 1 refusal (the operation is not allowed: a missing
/// file, a bad path, an ambiguous edit ...); 2 failure (the storage broke, a
/// corrupt state file, an unreadable input file) or bad usage; `run` exits 3
/// when the run pauses (see `burrow run --help`).
#[derive(Debug, Parser)]
#[command(name = "burrow", version, max_term_width = 100)]
#[command(after_help = AFTER_HELP)]
pub struct Cli {
    /// The backend to work on (default: memory:): memory:, state:FILE.json, fs:DIR,
    /// sqlite:FILE.db, s3://BUCKET/PREFIX or docker:IMAGE; PREFIX=SPEC mounts one
    /// (repeat it); `burrow --help` says what each is.
    #[arg(long = "backend", value_name = "SPEC", global = true)]
    pub backends: Vec<BackendArg>,

    /// The tenant whose files these are.
    #[arg(long, value_name = "T", global = true, default_value = DEFAULT_TENANT)]
    pub tenant: String,

    /// Print burrow-types JSON (refusals as {"error": {"kind", "message"}} on stdout).
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

/// Parses the command line: help and version as clap prints them, a usage error as
/// one `burrow: ...` message on stderr (exit 2), like every other burrow error.
pub fn parse() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => exit_usage(err),
    }
}

/// Ends the process for a clap error: help and version (and the help printed for a
/// missing subcommand) as clap does, anything else with the `burrow:` prefix instead of
/// clap's `error:`.
pub fn exit_usage(err: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        err.exit()
    }
    let text = err.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    eprint!("burrow: {text}");
    std::process::exit(err.exit_code())
}

const AFTER_HELP: &str = "\
SPEC:
  memory:            a fresh in-memory workspace, gone when burrow exits (the default)
  state:FILE.json    a FileData JSON document; a missing file is an empty workspace,
                     created on the first write; written back atomically after a change,
                     under a lock on FILE.json.lock (several processes may share it)
  fs:DIR             a folder on this machine, created when missing; files are plain files
  sqlite:FILE.db     a SQLite database, created when missing; --tenant picks whose files
  s3://BUCKET/PREFIX keys beneath PREFIX in an S3 bucket; endpoint, region and credentials
                     from the AWS_* environment variables (AWS_ENDPOINT_URL, ...)
  docker:IMAGE       a fresh container of IMAGE (pulled if missing) for this one command
                     or batch, removed when burrow ends; the only spec exec runs on
  PREFIX=SPEC        mounts SPEC at PREFIX (e.g. /memories=sqlite:mem.db); with mounts,
                     the default backend is the plain SPEC or /=SPEC (memory: if none)

Human output: ls prints `KIND SIZE MODIFIED PATH` lines, read prints numbered lines,
grep prints `path:line:text`, glob prints one path a line; a path holding a control
character is printed quoted and escaped (\"/a\\nb\"). A truncated ls, glob, grep or read
says so on stderr (`burrow: note: ...`).

--json: ls prints {\"entries\": [FileInfo...], \"truncated\": bool}, glob {\"paths\":
[...], \"truncated\": bool}, grep {\"matches\": [GrepMatch...], \"truncated\": bool}, read
{\"lines\": [...], \"offset\": N, \"total_lines\": N, \"truncated\": bool}.

BURROW_LOG: what the log prints, on stderr only (never stdout), in RUST_LOG's syntax; unset, it
is `warn`. BURROW_LOG=burrow_runtime=info prints a line as each run, turn, model request and
tool call of `burrow run` ends, with its fields (ids, outcome, token usage) and times.";

const BATCH_HELP: &str = "\
Run JSON lines from stdin, one operation each; print one JSON result line each, in order.

Each line is an object naming the op and the subcommand's arguments and options:
  {\"op\": \"ls\", \"path\": \"/\", \"limit\": 1000}
  {\"op\": \"read\", \"path\": \"/a.txt\", \"offset\": 0, \"limit\": 2000}
  {\"op\": \"cat\", \"path\": \"/a.bin\"}                 -> {\"content_b64\": ...}
  {\"op\": \"write\", \"path\": \"/a.txt\", \"content\": \"text\"}   (or \"content_b64\" for bytes)
  {\"op\": \"edit\", \"path\": \"/a.txt\", \"old\": \"x\", \"new\": \"y\", \"replace_all\": false}
  {\"op\": \"rm\", \"path\": \"/a.txt\"}   (\"recursive\": true deletes a directory whole)
  {\"op\": \"mkdir\", \"path\": \"/scratch\", \"parents\": false}
  {\"op\": \"glob\", \"pattern\": \"**/*.py\", \"under\": \"/\", \"limit\": 1000}
  {\"op\": \"grep\", \"pattern\": \"def \\\\w+\", \"under\": \"/\", \"include\": \"*.py\",
   \"fixed\": false, \"ignore_case\": false, \"limit\": 1000}
  {\"op\": \"exec\", \"command\": \"make test\", \"timeout\": 30}
Each output line is what --json prints for that operation, or {\"error\": {\"kind\", \"message\"}}.
A bad line yields one error line and the batch goes on; blank lines are skipped; a null field
counts as absent. The lines already waiting on stdin run as a group whose changes are saved
before its results are printed: a printed result is durable. Exit code: 0 all succeeded, 1 some
line was refused, 2 some line failed.";

#[cfg(feature = "mcp")]
const MCP_HELP: &str = "\
Serve the agent file tools (ls, read_file, write_file, edit_file, delete_path, glob, grep, and
execute on a sandbox backend) to an MCP client over stdin/stdout, until the client disconnects.

stdout carries only the MCP protocol; notes go to stderr. Add it to a client's configuration as
{\"mcpServers\": {\"burrow\": {\"command\": \"burrow\", \"args\": [\"mcp\", \"--backend\", \"state:work.json\"]}}}.
A state:FILE.json workspace is saved after every tool call that changes it. A refusal (a missing
file, an edit of a file not read first, a path outside the workspace) is a tool result with
isError true; a storage failure is a JSON-RPC error.";

#[cfg(feature = "run")]
const RUN_HELP: &str = "\
Run an agent in the workspace: the model answers PROMPT, calling the file tools (ls, read_file,
write_file, edit_file, delete_path, glob, grep, and execute on a sandbox backend) until it answers without a
tool call.

MODEL: scripted:FILE.jsonl, one answer per line: {\"text\": \"...\", \"tool_calls\": [{\"id\": \"c1\",
\"name\": \"read_file\", \"arguments\": {\"file_path\": \"/a.txt\"}}]} (also \"thinking\" and \"usage\");
running out of lines fails the run. openai:NAME (chat completions; any OpenAI-compatible server)
and openai-responses:NAME take the key from OPENAI_API_KEY and the endpoint from OPENAI_BASE_URL
(default https://api.openai.com/v1); anthropic:NAME takes ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL
(default https://api.anthropic.com). A missing key is refused before any request.

Human output: the answer's text on stdout; on stderr one line per tool call (`burrow: tool NAME
ARGS: ok|refused`) and a closing line with the outcome, turns, tool calls and token usage.
--json: one event per line on stdout, each an object with a \"type\": run_started (run_id,
thread_id), text_delta (text), thinking_delta (text), tool_call (id, name, arguments),
tool_result (id, name, content, is_error), usage (usage), run_ended (outcome, reason, message,
usage). A usage count the model did not report is left out (unknown is not zero).

--settings FILE (repeatable, layered in order: lists concatenated, later values win): hooks in
Claude Code's settings form; command hooks run on this machine with
sh -c, in the current directory. A failing PreToolUse hook denies the call unless it says
\"on_error\": \"allow\". A state:FILE.json workspace is saved after every change, before the
tool result reaches the model. Its permissions' Read(...) and Edit(...) deny rules are enforced
below every tool: a denied path is refused (permission_denied) and never listed or matched.
Its other rules and defaultMode (or --permission-mode MODE) decide each call before the
PreToolUse hooks' decision is combined: deny refuses, ask pauses the run (exit 3).
Its mcpServers (stdio entries {\"command\", \"args\", \"env\"}, as in .mcp.json, each started in
its own process group; streamable HTTP entries {\"type\": \"http\", \"url\", \"headers\"}) are
started before the run and their tools offered as mcp__SERVER__TOOL under the same hooks and
rules, to subagents too; one that cannot start is a warning (--strict-mcp: exit 2 before
anything runs); a call waits at most --mcp-timeout SECONDS (60); the servers are stopped after
the run, and killed before burrow ends on SIGTERM, SIGHUP or a second Ctrl-C.

--todos: the agent gets write_todos ({\"todos\": [{\"content\", \"status\", \"activeForm\"}]}, status
pending, in_progress or completed), which replaces its todo list; a second call in one answer is
refused. With --session the list is kept in the thread (`burrow thread show` lists it); --json
prints a todos event (todos) after each list set.

--memory: the agent gets memory (view, create, str_replace, insert, delete, rename; every path
under /memories), sent to anthropic: models as Anthropic's own memory_20250818 tool and to the
others as a function with the same commands, results and refusals. It works on the run's backend
as --tenant: mount /memories on a durable backend to keep memories between runs.

--upload FILE: FILE is stored as /uploads/NAME (NAME its file name) before the run starts, and
every request's instructions list each upload with its size, lines and MIME type; a name that is
not a plain file name, or a file over the backend's size limit, is refused (exit 1) before
anything is written or run. With --json each upload is an upload event (path, original_name,
size, line_count, mime_type, encoding). A later run of the thread (--thread, or burrow thread
answer) lists what /uploads holds then.

--artifacts DIR: the artifact workspace (typed, versioned JSON documents the agent and people
change together): kinds from DIR/KIND.schema.json, each rendered through DIR/KIND.md when there is
one ({{field}} and {{/json/pointer}} are replaced by the snapshot's values). The agent gets
list_artifacts, read_artifact, create_artifact, edit_artifact and archive_artifact; every request's
instructions render the artifacts it made or read, fresh, in <artifact id kind version> tags; and
what others changed since it last looked (`burrow artifact edit`, another thread's agent) comes
before its next request as a <workspace-changes> note kept in the thread (--no-notices: none). A
thread hears of changes made after its first run with the workspace started (--watch-after SEQ:
after that event; 0: all). A run keeps its workspace when continued (thread answer, the next
prompt to its thread, a takeover), and --agents children work in it as agents of their own. The
store is --session's, shared with `burrow artifact`; without --session it is in memory.

--skills DIR / --workspace-skills PATH: Agent Skills folders (NAME/SKILL.md: frontmatter name,
description, ...; the body is the instructions) from this machine (mounted at
/.burrow/skills/host-N) or the workspace. Each request lists them (--skill-listing-chars bounds
the listing); the agent gets skill ({\"name\"}), which returns a skill's instructions and resource
paths. A bad skill or a second of one name is a warning (a skill_error event with --json).

--compact-at TOKENS / --compact-keep N: before a request whose estimated input (the last
reported usage plus 4 characters a token for what came since) passes TOKENS (default 85% of the
model's context window when burrow knows it, else 170000), the model summarises the older history
in a request of its own and then reads the summary, its todo list and the last instruction
(verbatim) and the last N messages (6; a tool call is never kept without its results). The
history keeps every message: `burrow thread show` lists the compaction, a later run of the thread
reads the compacted view, `burrow thread compact ID` compacts by hand. PreCompact hooks (trigger
auto or manual, custom_instructions) run first; exit 2 blocks it. --json: compacted (trigger,
summarised, kept, tokens_before, summary), compaction_blocked (reason), compaction_failed
(reason, message: the run goes on uncompacted).

--agents DIR: subagents from DIR/*.md, Claude Code's agent files: a frontmatter between --- lines
with name, description, optional tools (a comma list of file tools; default all) and model (a
model spec as for --model, a scripted: file relative to DIR; default the parent's), then the
instructions. The agent gets task ({\"description\", \"prompt\", \"subagent_type\"}; general-purpose
is always there): the subagent runs to its end in its own thread PARENT/task-CALL of the session
(of this process without --session), seeing only the prompt, and its final text with a usage line
is the call's result; a subagent that does not complete makes the result an error with the
reason. A subagent has no task tool unless --max-task-depth (1) allows it; --task-max-turns (50)
bounds each subagent's model requests, --task-max-tokens N its tokens (input plus output; a
subagent past N stops before its next request, reason max_run_tokens). A subagent whose
definition has can_ask_questions gets ask_parent: in a task its question pauses the whole run as
ask_user does (exit 3; `burrow thread show` lists it, `burrow thread answer` gives the subagent
the answer and it goes on to its report). Hooks decide subagents' calls too; SubagentStop hooks run
as each ends. Human output: a line as each starts and ends; --json: task_started and task_ended
events and the subagent's own events, each with its run_id and its parent_run_id. A file that
does not parse is refused before anything runs.

--team FILE.json: the agent leads a team. FILE.json is a list of members (or {\"members\": [...]}),
each {\"name\", \"role\", \"description\", \"instructions\", \"model\"} (model a spec as for --model, a
scripted: file relative to FILE's folder; default the lead's). The lead (named lead) and every
member get team_todos (the team's shared todo list; {\"add\": [{\"id\", \"content\", \"blocked_by\"}]}
adds items), claim_todo and complete_todo ({\"id\"}: one member wins an item; an item whose blockers
are unfinished cannot be claimed) and send_message ({\"to\", \"content\"}; no to: every other
member); messages reach a member before its next model request. A member runs, in its own thread
THREAD/member-NAME of the session (of this process without --session), when a message waits for
it or an item can be claimed and the list changed since it last ran: in waves, all members with
something to do at once, the next wave once they all ended. The lead's run ends when the team is
quiet and no message waits for the lead; stopping the lead (Ctrl-C, burrow thread stop) stops its
members. Human output: a line as each member's run starts and ends; --json: member_started and
member_ended events and the members' own events, each with its run_id, the lead's parent_run_id
and the member. A team file that cannot be used is refused before anything runs.

--session SESSION --thread ID: the run goes through a session thread that every process
opening the same SESSION shares (sqlite:FILE.db, postgres://URL; memory: lives and dies with this
process). An idle thread starts a run here and streams it. A thread another process runs is
steered: PROMPT goes into that run, burrow says so and waits until it is carried out; if that
process's claim lapses first (it died), this one takes the thread over, records the run left
behind as failed (abandoned) and carries out the thread's untaken messages itself. A paused
thread takes PROMPT as the answer and the run resumes here. The agent also gets the ask_user
tool, which pauses the run until `burrow thread answer`. --command-id ID: a repeated ID prints
the remembered result and does nothing. --claim-ttl SECONDS (30): this process's claim lapses
that long after its last renewal (renewed every third of it). See `burrow thread --help`.

Exit codes: 0 the run completed; 3 it paused (a hook asked for approval, or ask_user); 2 it failed or
stopped, or the configuration is wrong (an unknown model, an unreadable script or settings
file, a hook matcher that is not a valid regex): then nothing runs.";

/// One operation of the file contract.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the entries directly beneath a directory.
    Ls {
        /// The directory.
        #[arg(default_value = "/")]
        path: String,
        /// At most this many entries.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_LIST_LIMIT)]
        limit: usize,
    },
    /// Print lines of a text file, numbered.
    Read {
        /// The file.
        path: String,
        /// The 0-based line to start at.
        #[arg(long, value_name = "N", default_value_t = 0)]
        offset: usize,
        /// At most this many lines.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_READ_LIMIT)]
        limit: usize,
    },
    /// Print the exact bytes of a file (with --json: {"content_b64": ...}).
    Cat {
        /// The file.
        path: String,
    },
    /// Create or replace a file with the bytes of FILE, or of stdin when FILE is "-" or absent.
    Write {
        /// The file to write in the workspace.
        path: String,
        /// A host file to copy the bytes from; "-" for stdin.
        #[arg(value_name = "FILE|-")]
        file: Option<PathBuf>,
    },
    /// Replace text in a file (line endings are preserved).
    Edit {
        /// The file.
        path: String,
        /// The text to replace; must occur exactly once unless --all.
        #[arg(long, allow_hyphen_values = true)]
        old: String,
        /// The replacement.
        #[arg(long, allow_hyphen_values = true)]
        new: String,
        /// Replace every occurrence.
        #[arg(long)]
        all: bool,
    },
    /// Delete a file or an empty directory; with -r, a directory and everything beneath it.
    Rm {
        /// The file or directory.
        path: String,
        /// Delete a directory with everything beneath it (not "/", not a mount point).
        #[arg(short = 'r', long)]
        recursive: bool,
    },
    /// Make a directory; with -p, its missing parents too, and no error if it exists.
    Mkdir {
        /// The directory to make.
        path: String,
        /// Make missing parents; an existing directory is no error.
        #[arg(short = 'p', long)]
        parents: bool,
    },
    /// List the files whose path under --under matches a glob pattern.
    Glob {
        /// The pattern: `*` `?` `[..]` within one segment, `**` across, `{a,b}`; no "/" matches the name at any depth.
        pattern: String,
        /// The directory to search beneath.
        #[arg(long, value_name = "P", default_value = "/")]
        under: String,
        /// At most this many files.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_LIST_LIMIT)]
        limit: usize,
    },
    /// Print the lines matching a Rust regex (or a fixed string) in files beneath --under.
    Grep {
        /// The pattern.
        pattern: String,
        /// The directory (or file) to search.
        #[arg(long, value_name = "P", default_value = "/")]
        under: String,
        /// Only files matching this glob.
        #[arg(long, value_name = "G")]
        include: Option<String>,
        /// Take the pattern literally.
        #[arg(long)]
        fixed: bool,
        /// Match without regard to case.
        #[arg(short = 'i', long = "ignore-case")]
        ignore_case: bool,
        /// At most this many matching lines.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_MATCH_LIMIT)]
        limit: usize,
    },
    /// Run `sh -c COMMAND` in the workspace (only on a sandbox backend).
    Exec {
        /// The shell command.
        #[arg(allow_hyphen_values = true)]
        command: String,
        /// Kill the command after this many seconds, 1 to 604800 (default: the backend's, 120).
        #[arg(long, value_name = "S")]
        timeout: Option<u64>,
    },
    /// Run JSON lines from stdin, one operation each; print one JSON result line each, in order.
    #[command(long_about = BATCH_HELP)]
    Batch,
    /// Serve the agent file tools to an MCP client over stdin/stdout, until it disconnects.
    #[cfg(feature = "mcp")]
    #[command(long_about = MCP_HELP)]
    Mcp {
        /// A Claude Code settings file whose permissions and tool hooks hold for every client
        /// (repeatable: merged in order): Read(...)/Edit(...) deny rules below every tool, the
        /// other rules and defaultMode on each call, PreToolUse/PostToolUse hooks around it (an
        /// ask, of a rule or a hook, is refused: a client cannot approve).
        #[arg(long = "settings", value_name = "FILE")]
        settings: Vec<PathBuf>,
    },
    /// State documents (state:FILE.json) by hand; opens no backend, so --backend and --tenant do nothing here.
    #[cfg(feature = "state")]
    #[command(subcommand)]
    State(StateCommand),
    /// Docker engine housekeeping; opens no backend, so --backend and --tenant do nothing here.
    #[cfg(feature = "docker")]
    #[command(subcommand)]
    Docker(DockerCommand),
    /// Run an agent in the workspace: the model answers PROMPT, calling the file tools.
    #[cfg(feature = "run")]
    #[command(after_long_help = RUN_HELP)]
    Run {
        /// What the user asks.
        prompt: String,
        /// The model: scripted:FILE.jsonl, openai:NAME, openai-responses:NAME
        /// (OPENAI_API_KEY, OPENAI_BASE_URL) or anthropic:NAME (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL).
        #[arg(long, value_name = "MODEL")]
        model: String,
        /// Hooks and permissions in Claude Code's settings form ({"hooks": {"PreToolUse": [...]},
        /// "permissions": {"deny": ["Read(/secrets/**)"]}}); repeatable, later files layered
        /// over earlier ones (lists concatenated, later scalar values win).
        #[arg(long, value_name = "FILE")]
        settings: Vec<PathBuf>,
        /// Most model requests in the run.
        #[arg(long, value_name = "N", default_value_t = 100,
              value_parser = clap::value_parser!(u32).range(1..))]
        max_turns: u32,
        /// Exit 2 before anything runs when an MCP server of the settings' mcpServers cannot
        /// be started or initialised (by default: a warning, and the run goes on without it).
        #[arg(long)]
        strict_mcp: bool,
        /// How long one call of an MCP server's tool waits for its answer.
        #[arg(long, value_name = "SECONDS", default_value_t = 60,
              value_parser = clap::value_parser!(u64).range(1..=86400))]
        mcp_timeout: u64,
        /// How long one model request waits for the provider to start answering;
        /// a request that times out is not sent again.
        #[arg(long, value_name = "SECONDS", default_value_t = 600,
              value_parser = clap::value_parser!(u64).range(1..=86400))]
        request_timeout: u64,
        /// Give the agent write_todos, a todo list it keeps (in the thread's history with
        /// --session); with --json each list it sets is a `todos` event.
        #[arg(long)]
        todos: bool,
        /// The permission mode, over the settings' defaultMode: default, acceptEdits, plan,
        /// bypassPermissions or dontAsk (deny rules hold in every mode).
        #[arg(long, value_name = "MODE")]
        permission_mode: Option<String>,
        /// Give the agent Anthropic's memory tool (memory_20250818) over /memories of the
        /// workspace, scoped by --tenant; mount a durable backend there to keep it
        /// (--backend /memories=sqlite:mem.db).
        #[arg(long)]
        memory: bool,
        /// A file of this machine to hand the agent, stored as /uploads/NAME of the workspace
        /// before the run starts and listed in every request (several allowed).
        #[arg(long = "upload", value_name = "FILE")]
        uploads: Vec<PathBuf>,
        /// Skills from a folder on this machine (NAME/SKILL.md, Agent Skills format), several
        /// allowed; each is mounted at /.burrow/skills/host-N, so read_file opens its resources.
        /// The agent gets `skill`; bad skills are warnings (`skill_error` events with --json).
        #[arg(long = "skills", value_name = "DIR")]
        skills: Vec<PathBuf>,
        /// Skills from a folder of the workspace (read through the backend), several allowed.
        #[arg(long = "workspace-skills", value_name = "PATH")]
        workspace_skills: Vec<String>,
        /// Most characters of the skill listing in each request's instructions.
        #[arg(long, value_name = "CHARS", default_value_t = 16_000)]
        skill_listing_chars: usize,
        /// Compact the history when a request's estimated input would pass TOKENS: the older
        /// part is summarised by the model and replaced, in what it reads, by the summary, the
        /// todos and the last instruction (the thread keeps every message). Default: 85% of the
        /// model's context window when burrow knows it, else 170000.
        #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
        compact_at: Option<u64>,
        /// Tool results estimated past TOKENS (4 characters a token) are saved under
        /// /.burrow/large_results/ and replaced by a preview and the file's path.
        #[arg(long, value_name = "TOKENS", default_value_t = 20_000,
              value_parser = clap::value_parser!(u32).range(100..=10_000_000))]
        large_result_tokens: u32,
        /// How many of the last messages a compaction keeps verbatim (more when a tool call's
        /// results would be cut from it).
        #[arg(long, value_name = "N", default_value_t = 6,
              value_parser = clap::value_parser!(u32).range(1..=1000))]
        compact_keep: u32,
        /// Subagents: DIR/*.md in Claude Code's agent form (frontmatter name, description,
        /// optional tools and model; the body is the instructions). The agent gets `task`.
        #[arg(long, value_name = "DIR")]
        agents: Option<PathBuf>,
        /// How deep tasks nest: 1 (the default) means a subagent starts no subagents.
        #[arg(long, value_name = "N", default_value_t = 1,
              value_parser = clap::value_parser!(u32).range(1..=16))]
        max_task_depth: u32,
        /// Most model requests of each subagent's run (and of each team member's run).
        #[arg(long, value_name = "N", default_value_t = 50,
              value_parser = clap::value_parser!(u32).range(1..))]
        task_max_turns: u32,
        /// Most tokens of each subagent's run (input plus output, as its model reports them):
        /// past it the subagent makes no more model requests and its task's result is an error
        /// with the reason max_run_tokens. No bound unless given.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        task_max_tokens: Option<u64>,
        /// A team: FILE.json lists its members (name, role, description, instructions, model).
        /// The agent leads it: it and each member get the team tools, and each member runs in
        /// its own thread THREAD/member-NAME when there is something for it.
        #[arg(long, value_name = "FILE.json")]
        team: Option<PathBuf>,
        /// Give the agent the artifact workspace: kinds from DIR/KIND.schema.json (each rendered
        /// through DIR/KIND.md when there is one), the artifact tools, the artifacts it follows
        /// in every request, and notes of others' changes. The store is --session's (the same
        /// SQLite file or PostgreSQL); without --session it is in memory, gone when burrow exits.
        #[cfg(feature = "artifacts")]
        #[arg(long, value_name = "DIR")]
        artifacts: Option<PathBuf>,
        /// With --artifacts: no notes of others' changes (the followed artifacts are still
        /// rendered fresh in every request).
        #[cfg(feature = "artifacts")]
        #[arg(long, requires = "artifacts")]
        no_notices: bool,
        /// With --artifacts: note others' changes after the workspace's event SEQ (0: every
        /// change ever made). Default: a thread hears of changes made after its first run with
        /// the workspace started, not of those before.
        #[cfg(feature = "artifacts")]
        #[arg(long, value_name = "SEQ", requires = "artifacts")]
        watch_after: Option<u64>,
        /// Run in a session thread: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION", requires = "thread")]
        session: Option<String>,
        /// The session thread to post PROMPT to.
        #[arg(long, value_name = "ID", requires = "session")]
        thread: Option<String>,
        /// Carry the message out once per ID: a repeat prints the remembered result and does nothing.
        #[arg(long, value_name = "ID", requires = "session")]
        command_id: Option<String>,
        /// How long this process's claim on the thread lasts without renewal.
        #[arg(long, value_name = "SECONDS", default_value_t = 30,
              value_parser = clap::value_parser!(u64).range(1..=86400))]
        claim_ttl: u64,
    },
    /// Session threads: list them, show one, answer a paused run, stop a run.
    #[cfg(feature = "run")]
    #[command(subcommand)]
    Thread(ThreadCommand),
    /// The artifact workspace of a session: list, show, history, create, edit, archive,
    /// and the agents' proposals (apply, reject). A person's change is attributed to --as.
    #[cfg(feature = "artifacts")]
    #[command(subcommand)]
    Artifact(ArtifactCommand),
    /// Serve session threads over HTTP (JSON under /v1, live runs as Server-Sent Events,
    /// a page at /) to the bearer tokens of --tokens; `burrow serve token add` makes one.
    #[cfg(feature = "serve")]
    #[command(args_conflicts_with_subcommands = true)]
    Serve {
        #[command(subcommand)]
        action: Option<ServeCommand>,
        #[command(flatten)]
        args: ServeArgs,
    },
}

/// `burrow serve`'s options.
#[cfg(feature = "serve")]
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The session threads live in: sqlite:FILE.db or postgres://... (several servers on
    /// one PostgreSQL are one service).
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    /// The model every run uses (as for `burrow run`).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Hooks, permissions and MCP servers in Claude Code's settings form (repeatable,
    /// layered in order, as for `burrow run`); the MCP servers are started once, for every run.
    #[arg(long = "settings", value_name = "FILE")]
    pub settings: Vec<PathBuf>,
    /// Most model requests in a run segment.
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: u32,
    /// Exit 2 before serving when an MCP server of the settings' mcpServers cannot be
    /// started or initialised (by default: a warning, and the runs go on without it).
    #[arg(long)]
    pub strict_mcp: bool,
    /// How long one call of an MCP server's tool waits for its answer.
    #[arg(long, value_name = "SECONDS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub mcp_timeout: u64,
    /// How long one model request waits for the provider to start answering.
    #[arg(long, value_name = "SECONDS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub request_timeout: u64,
    /// Give the agent write_todos.
    #[arg(long)]
    pub todos: bool,
    /// Subagents: DIR/*.md in Claude Code's agent form (as for `burrow run`). Each thread's
    /// agent gets `task`; its children run in threads THREAD/task-CALL of the token's tenant.
    #[arg(long, value_name = "DIR")]
    pub agents: Option<PathBuf>,
    /// How deep tasks nest: 1 (the default) means a subagent starts no subagents.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=16))]
    pub max_task_depth: u32,
    /// Most model requests of each subagent's run.
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub task_max_turns: u32,
    /// Most tokens of each subagent's run (input plus output, as its model reports them):
    /// past it the subagent makes no more model requests and its task's result is an error
    /// with the reason max_run_tokens. No bound unless given.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub task_max_tokens: Option<u64>,
    /// The artifact workspace of the session (DIR/KIND.schema.json kinds, as for `burrow
    /// artifact`): its operations under /v1/artifacts and /v1/proposals, each change
    /// attributed to the token's name, and each thread's view lists the artifacts its
    /// agent follows. Each thread's agent gets the artifact tools, the artifacts it follows
    /// in every request and notes of others' changes, as `burrow run --artifacts` gives
    /// them, working as thread:ID in its token's tenant.
    #[cfg(feature = "artifacts")]
    #[arg(long, value_name = "DIR")]
    pub artifacts: Option<PathBuf>,
    /// With --artifacts: no notes of others' changes for the agents.
    #[cfg(feature = "artifacts")]
    #[arg(long, requires = "artifacts")]
    pub no_notices: bool,
    /// The address to listen on; loopback unless told otherwise.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// The tokens file: one `SHA256HEX TENANT NAME` line per token.
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// How long this process's claim on a thread lasts without renewal.
    #[arg(long, value_name = "SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub claim_ttl: u64,
    /// The largest request body, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    pub max_body: usize,
    /// The most live-event watchers at once.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_watchers: usize,
    /// How long a client may take to send a request's headers (a slower one is cut off).
    #[arg(long, value_name = "SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout: u64,
    /// Idle PostgreSQL connections kept for reuse with a postgres:// session (about one
    /// per client served at once; more are opened when needed).
    #[arg(long, value_name = "N", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub pg_pool: u32,
}

/// `burrow serve token ...`.
#[cfg(feature = "serve")]
#[derive(Debug, Subcommand)]
pub enum ServeCommand {
    /// The tokens file.
    #[command(subcommand)]
    Token(TokenCommand),
}

/// `burrow serve token add`.
#[cfg(feature = "serve")]
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a random token for --tenant, print it once on stdout and append its
    /// `SHA256HEX TENANT NAME` line to the tokens file (created when missing).
    Add {
        /// The tokens file.
        #[arg(long, value_name = "FILE")]
        tokens: PathBuf,
        /// The token's name (for people: who or what holds it).
        #[arg(long, value_name = "NAME")]
        name: String,
    },
}

/// `burrow thread ...`: the threads of a session store (`--session`).
#[cfg(feature = "run")]
#[derive(Debug, Subcommand)]
pub enum ThreadCommand {
    /// List the session's threads: `ID STATUS ACTIVE_RUN` (with --json: {"threads": [...]}).
    List {
        /// The session: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION")]
        session: String,
    },
    /// Show a thread: its history, its runs with outcome and reason, its pending requests.
    Show {
        /// The thread.
        id: String,
        /// The session: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION")]
        session: String,
    },
    /// Answer a request of the thread's paused run; the run resumes here once all are
    /// answered, set up as `burrow run` started it unless --model, --settings or --max-turns say otherwise.
    Answer {
        /// The thread.
        id: String,
        /// The request to answer (`burrow thread show` lists them).
        #[arg(long, value_name = "R")]
        request: String,
        /// The answer.
        #[arg(allow_hyphen_values = true)]
        text: String,
        /// For an approval request: approve the call (else it is declined, TEXT the reason).
        #[arg(long)]
        approve: bool,
        /// The session: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION")]
        session: String,
        /// The model the resumed run continues with (as for `burrow run`); by
        /// default the one the run was started with.
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// Hooks in Claude Code's settings form (repeatable, as for `burrow run`); by default the run's own.
        #[arg(long, value_name = "FILE")]
        settings: Vec<PathBuf>,
        /// Most model requests in the resumed segment; by default the run's own (else 100).
        #[arg(long, value_name = "N",
              value_parser = clap::value_parser!(u32).range(1..))]
        max_turns: Option<u32>,
        /// How long one model request waits for the provider to start answering;
        /// a request that times out is not sent again.
        #[arg(long, value_name = "SECONDS", default_value_t = 600,
              value_parser = clap::value_parser!(u64).range(1..=86400))]
        request_timeout: u64,
        /// How long this process's claim on the thread lasts without renewal.
        #[arg(long, value_name = "SECONDS", default_value_t = 30,
              value_parser = clap::value_parser!(u64).range(1..=86400))]
        claim_ttl: u64,
    },
    /// Compact the thread's history now: the model summarises the older part and the next
    /// run reads the summary, the todos, the last instruction and the last messages in its
    /// place (the history keeps every message). The thread must be idle.
    Compact {
        /// The thread.
        id: String,
        /// What the summary should keep or stress, added to burrow's summary instructions.
        #[arg(long, value_name = "TEXT")]
        instructions: Option<String>,
        /// The session: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION")]
        session: String,
        /// The model that writes the summary (as for `burrow run`); by default the one the
        /// thread's last run was started with.
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// Hooks (PreCompact) in Claude Code's settings form (repeatable, layered in order,
        /// as for `burrow run`); by default the last run's own.
        #[arg(long = "settings", value_name = "FILE")]
        settings: Vec<PathBuf>,
        /// How many of the last messages stay verbatim.
        #[arg(long, value_name = "N", default_value_t = 6,
              value_parser = clap::value_parser!(u32).range(1..=1000))]
        keep: u32,
        /// How long the summary request waits for the provider to start answering.
        #[arg(long, value_name = "SECONDS", default_value_t = 600,
              value_parser = clap::value_parser!(u64).range(1..=86400))]
        request_timeout: u64,
    },
    /// Save a checkpoint of the thread's conversation now (a run also takes one before
    /// every batch of tool calls that changes files, holding the files' earlier bytes).
    Checkpoint {
        /// The thread.
        id: String,
        /// A label for people.
        #[arg(long, value_name = "L")]
        label: Option<String>,
        /// The session: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION")]
        session: String,
    },
    /// List the thread's checkpoints, oldest first: `ID CREATED_AT MESSAGES TURN FILES LABEL`
    /// (with --json: {"checkpoints": [...]}). What `execute` changed in a sandbox is not
    /// in any checkpoint; the metadata names those calls.
    Checkpoints {
        /// The thread.
        id: String,
        /// The session: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION")]
        session: String,
    },
    /// Rewind the thread to a checkpoint: the files (through --backend) get back the bytes
    /// they had then, and the conversation moves back (later messages stay in the store).
    /// A thread with a running or paused run is refused, and so is a --backend other than
    /// the one its runs recorded; a rewind cut short is finished by running it again.
    Rewind {
        /// The thread.
        id: String,
        /// The checkpoint (`burrow thread checkpoints` lists them).
        #[arg(long, value_name = "CHECKPOINT")]
        to: String,
        /// Restore the files only; the conversation goes on as it is.
        #[arg(long, conflicts_with = "conversation_only")]
        files_only: bool,
        /// Move the conversation back only; the files stay as they are.
        #[arg(long)]
        conversation_only: bool,
        /// The session: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION")]
        session: String,
        /// How long the rewind's claim on the thread lasts: a rewind cut short
        /// (its process killed) can be run again once it lapses.
        #[arg(long, value_name = "SECONDS", default_value_t = 30,
              value_parser = clap::value_parser!(u64).range(1..=86400))]
        claim_ttl: u64,
    },
    /// Start a new thread from a checkpoint's conversation (the files are not touched).
    Fork {
        /// The thread.
        id: String,
        /// The checkpoint.
        #[arg(long, value_name = "CHECKPOINT")]
        at: String,
        /// The new thread's id.
        #[arg(long = "new", value_name = "NEW_ID")]
        new_id: String,
        /// The session: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION")]
        session: String,
    },
    /// Stop the thread's run, in whichever process runs it, and wait until it has ended.
    Stop {
        /// The thread.
        id: String,
        /// The session: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION")]
        session: String,
    },
    /// Forget what the session's threads no longer need from before TIME: command
    /// results, events, and the tool-call records of runs that ended before it. Never
    /// what an unfinished run or the next run's repair needs; histories read the same.
    /// Prints what it removed (with --json: {"before", "commands", "events", "tool_calls"}).
    Prune {
        /// The cutoff: an ISO-8601 time (2026-11-01T00:00:00Z; a date alone is
        /// midnight UTC) or an age, that long ago (30d, 12h, 90m, 45s, 2w).
        #[arg(long, value_name = "TIME", value_parser = parse_before)]
        before: Before,
        /// The session: sqlite:FILE.db, postgres://... or memory: (per process).
        #[arg(long, value_name = "SESSION")]
        session: String,
    },
}

/// `burrow thread prune --before`: a point in time, or an age before now.
#[cfg(feature = "run")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Before {
    /// This time (milliseconds since the Unix epoch).
    At(i64),
    /// This long before now (the session store's clock).
    Ago(std::time::Duration),
}

#[cfg(feature = "run")]
impl Before {
    /// The cutoff in milliseconds since the epoch, `now_ms` being now.
    pub fn at_ms(self, now_ms: i64) -> i64 {
        match self {
            Before::At(ms) => ms,
            Before::Ago(age) => {
                now_ms.saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX))
            }
        }
    }
}

/// Reads `--before`: an ISO-8601 time or date, or an age such as `30d`.
#[cfg(feature = "run")]
fn parse_before(text: &str) -> Result<Before, String> {
    let text = text.trim();
    if let Some(age) = parse_age(text) {
        return age.map(Before::Ago);
    }
    let utc = jiff::tz::TimeZone::UTC;
    let at = if let Ok(t) = text.parse::<jiff::Timestamp>() {
        Some(t)
    } else if let Ok(dt) = text.parse::<jiff::civil::DateTime>() {
        utc.to_timestamp(dt).ok()
    } else if let Ok(d) = text.parse::<jiff::civil::Date>() {
        utc.to_timestamp(d.to_datetime(jiff::civil::Time::midnight()))
            .ok()
    } else {
        None
    };
    at.map(|t| Before::At(t.as_millisecond())).ok_or_else(|| {
        "expected an ISO-8601 time (2026-11-01T00:00:00Z, or a date 2026-11-01) or an age (30d, 12h, 90m, 45s, 2w)".to_owned()
    })
}

/// An age `N` + `s|m|h|d|w`; `None` when `text` is not shaped so.
#[cfg(feature = "run")]
fn parse_age(text: &str) -> Option<Result<std::time::Duration, String>> {
    let unit = text.chars().last()?;
    let seconds: u64 = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 7 * 86_400,
        _ => return None,
    };
    let digits = &text[..text.len() - 1];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(
        digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(seconds))
            .map(std::time::Duration::from_secs)
            .ok_or_else(|| "the age is too large".to_owned()),
    )
}

/// `burrow state ...`: a state document's files, with no backend opened.
#[cfg(feature = "state")]
#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// Fold FILE.json's journal (FILE.json.journal) into FILE.json, so that a reader of the
    /// document alone (the Python StateBackend) sees every change (with --json: {"records": N},
    /// how many journal records were folded).
    Compact {
        /// The state document, as in --backend state:FILE.json.
        file: PathBuf,
    },
}

/// `burrow docker ...`: housekeeping on the Docker engine, with no backend opened.
#[cfg(feature = "docker")]
#[derive(Debug, Subcommand)]
pub enum DockerCommand {
    /// Remove the burrow sandbox containers of this host whose owner process is gone
    /// (with --json: {"removed": N}).
    Gc,
}

/// What every `burrow artifact` command names: the session and the kinds.
#[cfg(feature = "artifacts")]
#[derive(Debug, clap::Args)]
pub struct ArtifactCommon {
    /// The session the workspace lives in: sqlite:FILE.db or postgres://...
    #[arg(long, value_name = "SESSION")]
    pub session: String,
    /// The folder of the kinds: DIR/KIND.schema.json (and an optional DIR/KIND.md).
    #[arg(long, value_name = "DIR")]
    pub artifacts: PathBuf,
    /// Who the change is by (default: the login name, $USER or $LOGNAME, else "user").
    #[arg(long = "as", value_name = "NAME")]
    pub as_name: Option<String>,
}

/// `burrow artifact ...`: the artifact workspace of a session, by hand.
#[cfg(feature = "artifacts")]
#[derive(Debug, Subcommand)]
pub enum ArtifactCommand {
    /// List the artifacts: `ID KIND vVERSION UPDATED_BY` (with --json: {"artifacts": [...]}).
    List {
        /// Only this kind.
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
        /// Archived ones too.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        common: ArtifactCommon,
    },
    /// Show an artifact, rendered (with --json: {"artifact": ...}).
    Show {
        /// The artifact.
        id: String,
        /// This version instead of the head.
        #[arg(long, value_name = "N")]
        version: Option<u64>,
        #[command(flatten)]
        common: ArtifactCommon,
    },
    /// An artifact's revisions, oldest first.
    History {
        /// The artifact.
        id: String,
        #[command(flatten)]
        common: ArtifactCommon,
    },
    /// Create an artifact of KIND from the JSON in FILE.
    Create {
        /// One of the kinds of --artifacts.
        kind: String,
        /// The first snapshot, a JSON file.
        file: PathBuf,
        #[command(flatten)]
        common: ArtifactCommon,
    },
    /// Change an artifact made at version --base: a JSON Patch, or one anchored text edit.
    Edit {
        /// The artifact.
        id: String,
        /// The version the change was made against (a stale one is a conflict).
        #[arg(long, value_name = "N")]
        base: u64,
        /// An RFC 6902 JSON Patch file.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["old", "new", "field"])]
        patch: Option<PathBuf>,
        /// The text to replace: it occurs exactly once in the field.
        #[arg(long, value_name = "TEXT", requires = "new")]
        old: Option<String>,
        /// The text that replaces it.
        #[arg(long, value_name = "TEXT", requires = "old")]
        new: Option<String>,
        /// A JSON Pointer to the string field (default /text).
        #[arg(long, value_name = "F")]
        field: Option<String>,
        /// What the change does, in a line.
        #[arg(long, value_name = "TEXT")]
        summary: Option<String>,
        #[command(flatten)]
        common: ArtifactCommon,
    },
    /// Archive an artifact: it stays readable and takes no more changes.
    Archive {
        /// The artifact.
        id: String,
        /// The version the archive was decided against.
        #[arg(long, value_name = "N")]
        base: u64,
        #[command(flatten)]
        common: ArtifactCommon,
    },
    /// The pending proposals (with --all, the decided ones too).
    Proposals {
        /// Decided ones too.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        common: ArtifactCommon,
    },
    /// Apply a pending proposal.
    Apply {
        /// The proposal.
        proposal: u64,
        #[command(flatten)]
        common: ArtifactCommon,
    },
    /// Reject a pending proposal.
    Reject {
        /// The proposal.
        proposal: u64,
        /// Why.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        #[command(flatten)]
        common: ArtifactCommon,
    },
}
