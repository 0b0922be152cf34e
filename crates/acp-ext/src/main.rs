//! `acp-ext`: the command-line tool for ACP Extension Core.
//!
//! A thin shell over library calls: argument parsing and printing only.

use std::ffi::OsString;
use std::io::{self, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use acp_ext::check::{self, Severity, input::Format};
use acp_ext::output::{Progress, Style};
use acp_ext::tap::{RecordFormat, TapOptions};
use acp_extension_core::namespace::{Namespace, NamespaceSet};
use acp_extension_core::validate::{self, Kind, StreamOptions};
use clap::{Parser, Subcommand};

/// Validation allocates many small strings; mimalloc makes that markedly cheaper.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Tools for ACP Extension Core: validate payloads, print schemas, fold usage.
#[derive(Debug, Parser)]
#[command(name = "acp-ext", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate JSON values (one per line, or one after another) against the contract.
    Validate {
        /// Payload kind (see `acp-ext schema`); `auto` reads whole JSON-RPC messages, and a value that is none is invalid (`not-a-message`).
        #[arg(long = "as", value_name = "KIND", default_value = "auto")]
        kind: Kind,
        /// One JSON line per value: {"index","valid","errors"}.
        #[arg(long, conflicts_with = "quiet")]
        json: bool,
        /// Print only `N valid, M invalid`.
        #[arg(long)]
        quiet: bool,
        /// Worker threads (default: all cores).
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        /// Files to read; `-` or none reads standard input.
        files: Vec<PathBuf>,
    },
    /// Print the JSON Schema (draft 2020-12) of a payload kind, or list the kinds.
    Schema {
        /// Kind name; `all` prints one document with every kind; none lists them.
        kind: Option<String>,
    },
    /// Lint transcripts and fixtures against the contract: shapes, negotiation,
    /// subagent runs, usage accounting, timestamps (`--rules` lists the rules).
    ///
    /// Reads JSON-RPC lines, `tap --record` transcripts, SDK conductor traces
    /// and loose fixtures (detected per file). Exit 0: no errors; 1: errors;
    /// 2: a file could not be read.
    Check {
        /// One finding per line: {"file","line","rule","severity","path","message"}.
        #[arg(long)]
        json: bool,
        /// Input format: auto, jsonrpc, tap, trace or loose.
        #[arg(long, value_name = "F", default_value = "auto")]
        format: Format,
        /// Report only findings at least this severe: info, warning or error.
        #[arg(long, value_name = "S", default_value = "info")]
        min_severity: Severity,
        /// Print the rule table (id, severity, meaning) and exit; with --json, one rule per line.
        #[arg(long)]
        rules: bool,
        /// Files to read; `-` or none reads standard input.
        files: Vec<PathBuf>,
    },
    /// Fold transcripts into the consumer state a client would hold: per session the
    /// title, goal, activity, subagent runs, tasks, usage, steers and pending requests;
    /// the rate limits; and what was invalid.
    ///
    /// Reads every format `check` reads. `--json`: one document per file (schema:
    /// `acp-ext schema state`). Exit 0, or 2 when a file could not be read.
    State {
        /// One JSON document per file: {"file", "negotiation", "sessions", "rateLimits", "invalid", …}.
        #[arg(long)]
        json: bool,
        /// Input format: auto, jsonrpc, tap, trace or loose.
        #[arg(long, value_name = "F", default_value = "auto")]
        format: Format,
        /// Fold with the bounded mode's capacities (oldest entries dropped).
        #[arg(long)]
        bounded: bool,
        /// Files to read; `-` or none reads standard input.
        files: Vec<PathBuf>,
    },
    /// A live terminal view of a transcript's folded state: sessions, the subagent run
    /// tree, usage, rate-limit meters, goal, findings and a message timeline.
    ///
    /// Follows the file as it grows (beside `acp-ext tap --record FILE`), or replays a
    /// finished one message by message. Without a terminal (or with --once), prints the
    /// final frame as text.
    Watch {
        /// Print the final frame as plain text and exit.
        #[arg(long)]
        once: bool,
        /// Width of that frame.
        #[arg(long, default_value_t = 100, value_name = "COLUMNS")]
        width: u16,
        /// Height of that frame.
        #[arg(long, default_value_t = 48, value_name = "ROWS")]
        height: u16,
        /// Input format: auto, jsonrpc, tap, trace or loose.
        #[arg(long, value_name = "F", default_value = "auto")]
        format: Format,
        /// On exit, print `messages=N redraws=N seconds=S` to stderr.
        #[arg(long, hide = true)]
        stats: bool,
        /// The transcript.
        file: PathBuf,
    },
    /// Probe the embedded reference agent with every scripted command (the default).
    Demo {
        /// List every message of the run (by default: the first turn's, and
        /// any with a finding).
        #[arg(long)]
        traffic: bool,
        /// Which ACP version the demo's client asks for: `1`, `2` (`serve`
        /// answers v2: receipts, `state_update`s) or `auto`.
        #[arg(long, value_name = "VERSION", default_value = "1")]
        protocol: acp_ext::probe::ProtocolChoice,
    },
    /// Probe any ACP agent: what it advertises, and whether its traffic keeps the contract.
    Probe {
        /// Print one JSON report.
        #[arg(long)]
        json: bool,
        /// Namespaces of the client's extension advertisement.
        #[arg(long, default_value = "both")]
        namespace: NamespaceSet,
        /// Open a session (`session/new` in a temporary directory).
        #[arg(long)]
        session: bool,
        /// Run a prompt in the session (repeatable; implies --session).
        #[arg(long = "prompt", value_name = "TEXT")]
        prompts: Vec<String>,
        /// Timeout of every request, in seconds.
        #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
        timeout: f64,
        /// Capture the agent's stderr instead of passing it through.
        #[arg(long)]
        quiet: bool,
        /// Which client to play: `core` (every ACP Extension Core client feature), `standard`
        /// (standard ACP only: `subagents`, `session.compaction`, `session.notices`, `plan`) or
        /// `plain` (neither, and it sends nothing of the extensions: each query the agent
        /// advertised is reported as skipped).
        #[arg(long, value_name = "DIALECT", default_value = "core")]
        client: acp_ext::probe::ClientDialect,
        /// Which ACP version to ask for: `1`, `2` (an agent that answers v1 is reported) or
        /// `auto` (v2 first, then what the agent supports). A v2 turn ends at its `idle`
        /// `state_update`; a refusal of the version asked (`-32022`) is named.
        #[arg(long, value_name = "VERSION", default_value = "1")]
        protocol: acp_ext::probe::ProtocolChoice,
        /// Do not steer running turns (by default a turn still running after 100 ms gets one
        /// steer, when the agent takes steers by request).
        #[arg(long)]
        no_steer: bool,
        /// Exit 1 when a finding is at least this severe: error (default),
        /// warning or info (`--fail-on info` demands a spotless run).
        #[arg(long, value_name = "S", default_value = "error")]
        fail_on: acp_ext::check::Severity,
        /// The agent command and its arguments.
        #[arg(last = true, required = true, value_name = "AGENT_COMMAND")]
        command: Vec<String>,
    },
    /// Sit between a client and an agent that speak different dialects (ACP Extension Core,
    /// standard ACP as the official adapters send it) and translate: subagent runs, steering,
    /// goals, turn usage, claude's rate limits. Every line not translated passes byte for
    /// byte. Configure the client to run
    /// `acp-ext bridge [--to core|standard|auto] -- AGENT_COMMAND [ARGS…]` instead of the
    /// agent.
    Bridge {
        /// What the client reads: `core` (subagents/event, _<ns>/session/steer), `standard`
        /// (subagent_update and child sessions, _session/steering, _session/goal) or `auto`
        /// (what the client's initialize advertises).
        #[arg(long, value_name = "DIALECT", default_value = "auto")]
        to: acp_ext::bridge::BridgeTarget,
        /// At exit, print where it translated and how many lines, as one JSON line on stderr.
        #[arg(long)]
        stats: bool,
        /// The agent command and its arguments (after `--`).
        #[arg(last = true, required = true, value_name = "AGENT_COMMAND")]
        command: Vec<OsString>,
    },
    /// Sit between an ACP client and its agent: forward both ways byte for byte, record and
    /// validate off the forwarding path. Configure the client to run
    /// `acp-ext tap [OPTIONS] -- AGENT_COMMAND [ARGS…]` instead of the agent.
    Tap {
        /// Write the transcript (secrets redacted) to FILE.
        #[arg(long, value_name = "FILE")]
        record: Option<PathBuf>,
        /// Record format: `jsonl` ({"dir","t","msg"|"raw"} per line) or `conductor` (the ACP
        /// SDK conductor's trace format, for its trace viewer).
        #[arg(long, value_name = "FORMAT", default_value = "jsonl")]
        format: RecordFormat,
        /// Write findings to FILE as JSON lines instead of stderr.
        #[arg(long, value_name = "FILE", conflicts_with = "no_validate")]
        findings: Option<PathBuf>,
        /// Do not validate.
        #[arg(long)]
        no_validate: bool,
        /// Cap the validator at SHARE of one core (0 to 1; default 1, no cap: it runs at idle
        /// priority). Past the cap, lines are skipped for validation and counted.
        #[arg(long, value_name = "SHARE", conflicts_with = "no_validate")]
        validator_cpu: Option<f64>,
        /// At exit, print the counters (bytes, messages, validated, skipped…) as one JSON line
        /// on stderr.
        #[arg(long)]
        stats: bool,
        /// The agent command and its arguments (after `--`).
        #[arg(last = true, required = true, value_name = "AGENT_COMMAND")]
        command: Vec<OsString>,
    },
    /// Usage accounting tools.
    Usage {
        #[command(subcommand)]
        command: UsageCommand,
    },
    /// Run the reference ACP agent over stdio (`--help` lists the prompt commands).
    #[command(after_help = acp_ext::serve::prompt_help())]
    Serve {
        /// Namespaces to advertise: ua, lody or both.
        #[arg(long, default_value = "both")]
        namespace: acp_ext::serve::ServeNamespace,
        /// Advertise only these features (comma-separated capability keys).
        #[arg(long, value_name = "FEATURE,...", value_delimiter = ',', value_parser = acp_ext::serve::parse_feature)]
        only: Option<Vec<String>>,
        /// Session ids: `unique` (`sess-<random>-N`, never shared with another serve
        /// process) or `counter` (`sess-N`, the same for the same input).
        #[arg(long, value_name = "STYLE", default_value = "unique")]
        session_ids: acp_ext::serve::SessionIds,
        /// What a client that advertised no extension gets: `quiet` (no agent-only
        /// `_<ns>/…` notifications) or `notify` (every notification the contract allows).
        #[arg(long, value_name = "MODE", default_value = "quiet")]
        plain_clients: acp_ext::serve::PlainClients,
    },
}

#[derive(Debug, Subcommand)]
enum UsageCommand {
    /// Fold native usage snapshots through the accumulator: one output line per input line.
    Fold {
        /// Usage scope id (default: a fresh UUID v4).
        #[arg(long, value_name = "ID")]
        scope_id: Option<String>,
        /// Namespace of `_meta.<ns>.usageScopeId`.
        #[arg(long, default_value = "lody")]
        namespace: Namespace,
        /// JSONL input `{"sessionId","operationId","rows":{model: ModelUsage}}`; default stdin.
        file: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    #[cfg(unix)]
    {
        let mut args = std::env::args_os().skip(1);
        if args.next().is_some_and(|a| a == acp_ext::tap::GUARD_ARG) {
            std::process::exit(acp_ext::tap::guard_main(args));
        }
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        // A reader that stops early (`| head`) is not an error.
        Err(err)
            if err
                .downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("acp-ext: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let command = cli.command.unwrap_or(Command::Demo {
        traffic: false,
        protocol: acp_ext::probe::ProtocolChoice::V1,
    });
    match command {
        Command::Validate {
            kind,
            json,
            quiet,
            threads,
            files,
        } => validate_files(kind, json, quiet, threads, &files),
        Command::Schema { kind } => schema(kind.as_deref()),
        Command::Check {
            rules: true, json, ..
        } => {
            let mut out = io::stdout().lock();
            check::rules::write_table(&mut out, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check {
            json,
            format,
            min_severity,
            files,
            ..
        } => {
            let options = check::run::Options::for_terminal()
                .format(format)
                .json(json)
                .min_severity(min_severity)
                // `--json` findings go out while the files are read.
                .progress(Progress::allowed(json));
            let summary = check::run::check_files(
                &files,
                &options,
                &mut io::stdout().lock(),
                &mut io::stderr().lock(),
            )?;
            Ok(ExitCode::from(summary.exit_code()))
        }
        Command::State {
            json,
            format,
            bounded,
            files,
        } => {
            let options = acp_ext::state::Options::new(Style::stdout())
                .format(format)
                .json(json)
                .bounded(bounded)
                .progress(Progress::allowed(false));
            let code = acp_ext::state::run(
                &files,
                options,
                &mut io::stdout().lock(),
                &mut io::stderr().lock(),
            )?;
            Ok(ExitCode::from(code))
        }
        Command::Watch {
            once,
            width,
            height,
            format,
            stats,
            file,
        } => {
            let options = acp_ext::watch::WatchOptions::default()
                .format(format)
                .once(once)
                .size(width.max(20), height.max(10))
                .stats(stats);
            acp_ext::watch::run(&file, &options, &mut io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { traffic, protocol } => {
            let agent = acp_ext::demo::serve_command()?;
            let mut out = io::stdout();
            let report = runtime()?.block_on(acp_ext::demo::run(
                agent,
                protocol,
                &mut out,
                Style::stdout(),
                traffic,
            ))?;
            Ok(if report.has_errors() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Serve {
            namespace,
            only,
            session_ids,
            plain_clients,
        } => {
            let mut options = acp_ext::serve::ServeOptions::new()
                .namespace(namespace)
                .session_ids(session_ids)
                .plain_clients(plain_clients);
            if let Some(features) = only {
                options = options.only(features);
            }
            runtime()?.block_on(acp_ext::serve::run_stdio(options))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Probe {
            json,
            namespace,
            session,
            prompts,
            timeout,
            quiet,
            client,
            protocol,
            no_steer,
            fail_on,
            command,
        } => {
            let mut options = acp_ext::probe::ProbeOptions::default()
                .client(client)
                .protocol(protocol)
                .steer(!no_steer)
                .namespace(namespace)
                .session(session)
                .quiet(quiet)
                .timeout(std::time::Duration::from_secs_f64(timeout.max(0.001)));
            for p in prompts {
                options = options.prompt(p);
            }
            // The guard ends the agent's process group if this process is killed.
            if let Ok(exe) = std::env::current_exe() {
                options = options.agent_guard(exe);
            }
            let run = acp_ext::probe::run_interruptible(command, options);
            let report = match runtime()?.block_on(run) {
                Ok(report) => report,
                Err(e) => match e.downcast_ref::<acp_ext::probe::Interrupted>() {
                    Some(i) => return Ok(ExitCode::from(128 + i.signal as u8)),
                    None => return Err(e),
                },
            };
            let mut out = io::stdout().lock();
            if json {
                serde_json::to_writer_pretty(&mut out, &report)?;
                writeln!(out)?;
            } else {
                report.print_human(&mut out, Style::stdout())?;
            }
            Ok(if report.has_findings_at_least(fail_on) {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Bridge { to, stats, command } => Ok(bridge(to, stats, command)),
        Command::Tap {
            record,
            format,
            findings,
            no_validate,
            validator_cpu,
            stats,
            command,
        } => Ok(tap(
            record,
            format,
            findings,
            no_validate,
            validator_cpu,
            stats,
            command,
        )),
        Command::Usage {
            command:
                UsageCommand::Fold {
                    scope_id,
                    namespace,
                    file,
                },
        } => usage_fold(scope_id, namespace, file),
    }
}

fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

fn open(path: &PathBuf) -> anyhow::Result<Box<dyn Read>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(io::stdin().lock()));
    }
    let f = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    Ok(Box::new(f))
}

fn validate_files(
    kind: Kind,
    json: bool,
    quiet: bool,
    threads: Option<usize>,
    files: &[PathBuf],
) -> anyhow::Result<ExitCode> {
    // `--quiet` prints only the counts: skip collecting violations.
    let mut options = StreamOptions::default().details(!quiet);
    if let Some(n) = threads {
        options = options.threads(n);
    }
    let stdin = [PathBuf::from("-")];
    let files = if files.is_empty() { &stdin[..] } else { files };
    let style = Style::stdout();
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let (mut valid, mut invalid, mut not_messages) = (0u64, 0u64, 0u64);
    let mut shown = 0usize;
    const SHOW: usize = 20;
    let mut write_err: Option<io::Error> = None;
    let mut stderr = io::stderr();
    for path in files {
        let reader = open(path)?;
        let name = path.display().to_string();
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let mut progress = Progress::new(&name, size, Progress::allowed(json));
        let summary = validate::validate_stream(kind, progress.count(reader), &options, |item| {
            progress.update(&mut stderr);
            if item
                .report
                .violations
                .iter()
                .any(|v| v.pointer.is_empty() && v.rule.id() == "not-a-message")
            {
                not_messages += 1;
            }
            if write_err.is_some() {
                return;
            }
            let r = if json {
                acp_ext::output::write_item_json(&mut out, &item)
            } else if !quiet && !item.report.is_valid() && shown < SHOW {
                shown += 1;
                // Out at once, below the bar, which is drawn again after.
                progress.finish(&mut stderr);
                acp_ext::output::write_item_human(&mut out, &style, &name, &item)
                    .and_then(|()| out.flush())
            } else {
                Ok(())
            };
            if let Err(e) = r {
                write_err = Some(e);
            }
        })
        .map_err(|e| anyhow::anyhow!("cannot read {name}: {e}"));
        progress.finish(&mut stderr);
        let summary = summary?;
        valid += summary.values - summary.invalid;
        invalid += summary.invalid;
    }
    if let Some(e) = write_err
        && e.kind() != io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    if !json {
        if !quiet && invalid as usize > shown {
            writeln!(
                out,
                "… and {} more invalid values",
                invalid as usize - shown
            )?;
        }
        let mut line = format!("{valid} valid, {invalid} invalid");
        if not_messages > 0 {
            line += &format!(" ({not_messages} not a JSON-RPC message)");
        }
        if quiet {
            writeln!(out, "{line}")?;
        } else if invalid == 0 {
            writeln!(out, "{}", style.ok(&line))?;
        } else {
            writeln!(out, "{}", style.bad(&line))?;
        }
    }
    out.flush()?;
    Ok(if invalid == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// An agent that could not be started: said on stderr, and the exit code a
/// shell answers for a command it cannot find (127) or run (126).
fn not_started(command: &str, e: &io::Error) -> ExitCode {
    eprintln!("acp-ext {command}: {e}");
    ExitCode::from(if e.kind() == io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

fn bridge(to: acp_ext::bridge::BridgeTarget, stats: bool, command: Vec<OsString>) -> ExitCode {
    let mut options = acp_ext::bridge::BridgeOptions::new(to);
    // The guard ends the agent's process group if this process is killed.
    if let Ok(exe) = std::env::current_exe() {
        options = options.agent_guard(exe);
    }
    let (program, args) = command.split_first().expect("clap requires the command");
    let outcome = match acp_ext::bridge::run(program, args, options) {
        Ok(outcome) => outcome,
        Err(e) => return not_started("bridge", &e),
    };
    if stats {
        eprintln!(
            "acp-ext bridge: stats {}",
            serde_json::json!({
                "mode": outcome.mode.as_str(),
                "translatedFromClient": outcome.translated[0],
                "translatedFromAgent": outcome.translated[1],
            })
        );
    }
    ExitCode::from((outcome.exit_code & 0xff) as u8)
}

fn tap(
    record: Option<PathBuf>,
    format: RecordFormat,
    findings: Option<PathBuf>,
    no_validate: bool,
    validator_cpu: Option<f64>,
    stats: bool,
    command: Vec<OsString>,
) -> ExitCode {
    let mut options = TapOptions::new().validate(!no_validate);
    if let Some(share) = validator_cpu {
        options = options.validator_cpu(share);
    }
    // The guard ends the agent's process group if this process is killed.
    if let Ok(exe) = std::env::current_exe() {
        options = options.agent_guard(exe);
    }
    if let Some(path) = record {
        options = options.record(path, format);
    }
    if let Some(path) = findings {
        options = options.findings(path);
    }
    let (program, args) = command.split_first().expect("clap requires the command");
    let outcome = match acp_ext::tap::run(program, args, options) {
        Ok(outcome) => outcome,
        Err(e) => return not_started("tap", &e),
    };
    if let Some(e) = &outcome.record_error {
        eprintln!("acp-ext tap: recording stopped: {e}");
    }
    let s = &outcome.stats;
    if s.dropped_anything() {
        let mut parts = vec![format!("{} messages not validated", s.validation_skipped)];
        if s.unmonitored_bytes() > 0 {
            parts.push(format!(
                "{} bytes (about {} lines) forwarded unseen, neither recorded nor validated",
                s.unmonitored_bytes(),
                s.unmonitored_lines_estimate()
            ));
        }
        if s.oversize_lines > 0 {
            parts.push(format!("{} oversized lines", s.oversize_lines));
        }
        eprintln!(
            "acp-ext tap: off the forwarding path (forwarding was not affected): {}",
            parts.join(", ")
        );
    }
    if stats {
        eprintln!(
            "acp-ext tap: stats {}",
            serde_json::to_string(s).unwrap_or_default()
        );
    }
    ExitCode::from((outcome.exit_code & 0xff) as u8)
}

fn schema(kind: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut out = io::stdout().lock();
    match kind {
        None => {
            writeln!(
                out,
                "Payload kinds (acp-ext schema KIND prints one; `all` prints every one):"
            )?;
            for k in Kind::ALL {
                writeln!(out, "  {}", k.name())?;
            }
            writeln!(out, "  state (the document of `acp-ext state --json`)")?;
        }
        Some("state") => {
            serde_json::to_writer_pretty(&mut out, &acp_extension_core::state::document_schema())?;
            writeln!(out)?;
        }
        Some("all") => {
            serde_json::to_writer_pretty(&mut out, &acp_extension_core::validate::all_schemas())?;
            writeln!(out)?;
        }
        Some(name) => {
            let kind: Kind = name.parse()?;
            serde_json::to_writer_pretty(&mut out, &kind.schema())?;
            writeln!(out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn usage_fold(
    scope_id: Option<String>,
    namespace: Namespace,
    file: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    use acp_extension_core::usage::{SessionUsageAccumulator, fold_lines};
    let mut acc = match scope_id {
        Some(id) => SessionUsageAccumulator::with_scope_id(id)?,
        None => SessionUsageAccumulator::new(),
    }
    .with_namespace(namespace);
    let input = open(&file.unwrap_or_else(|| PathBuf::from("-")))?;
    let stdout = io::stdout();
    let out = io::BufWriter::new(stdout.lock());
    let summary = fold_lines(BufReader::new(input), out, &mut acc)?;
    Ok(if summary.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
