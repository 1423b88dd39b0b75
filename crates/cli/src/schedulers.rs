//! `elevator schedulers [NAME]`: what schedulers exist and what their tunables mean.

use clap::Args;

#[derive(Args)]
pub struct SchedulersArgs {
    /// Show the tunables of this scheduler (name or alias).
    pub name: Option<String>,
}

pub fn run(args: &SchedulersArgs) -> Result<(), String> {
    match &args.name {
        None => {
            for (name, aliases, what) in elevator_sched::SCHEDULERS {
                let aliases = if aliases.is_empty() {
                    String::new()
                } else {
                    format!(" (alias {})", aliases.join(", "))
                };
                println!("{name}{aliases}\n    {what}");
            }
        }
        Some(name) => {
            let s = elevator_sched::by_name(name)?;
            let tunables = s.tunables();
            if tunables.is_empty() {
                println!("{} has no tunables", s.name());
            }
            for t in tunables {
                println!(
                    "{:<20} {:>8} {:<10} default {:<8} range {:<16} {}",
                    t.name, t.value, t.unit, t.default, t.range, t.description
                );
            }
        }
    }
    Ok(())
}
