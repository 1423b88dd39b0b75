//! `elevator serve --config FILE`: the real backend. Runs until SIGINT or SIGTERM, then lets
//! in-flight requests finish and closes the connections.

use std::path::PathBuf;

use clap::Args;
use elevator_server::{Server, ServerConfig, TlsSetting};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

#[derive(Args)]
pub struct ServeArgs {
    /// Server configuration (TOML): listen address, exports, scheduler and tunables.
    #[arg(long)]
    pub config: PathBuf,
    /// TLS policy, overriding the config's `tls`: off, on (the client's choice: STARTTLS is
    /// offered) or require (every option but STARTTLS is refused until TLS is up).
    #[arg(long, value_name = "off|on|require")]
    pub tls: Option<TlsSetting>,
}

pub fn run(args: &ServeArgs) -> Result<(), String> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let mut config = ServerConfig::from_toml_file(&args.config).map_err(|e| e.to_string())?;
    if let Some(t) = args.tls {
        config.tls = t;
        config.validate().map_err(|e| e.to_string())?;
    }
    // Installed before the server starts, so that a signal right after start is not lost.
    let mut signals = Signals::new([SIGINT, SIGTERM])
        .map_err(|e| format!("cannot install handlers for SIGINT and SIGTERM: {e}"))?;
    let server = Server::start(config).map_err(|e| e.to_string())?;
    // Sleeps until one arrives.
    let _ = signals.forever().next();
    server.shutdown();
    Ok(())
}
