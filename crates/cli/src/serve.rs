//! `elevator serve --config FILE`: the real backend. Runs until SIGINT or SIGTERM, then lets
//! in-flight requests finish and closes the connections.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Args;
use elevator_server::{serve, ServerConfig, TlsSetting};

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
        .init();
    let mut config = ServerConfig::from_toml_file(&args.config).map_err(|e| e.to_string())?;
    if let Some(t) = args.tls {
        config.tls = t;
        config.validate().map_err(|e| e.to_string())?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| format!("cannot install a handler for signal {signal}: {e}"))?;
    }
    serve(config, stop).map_err(|e| e.to_string())
}
