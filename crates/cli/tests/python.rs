//! The Python package end to end: a fresh venv, `pip install ./python` (maturin builds
//! crates/python), then python/tests under pytest against this crate's `elevator` binary.
//!
//! The venv is made with Debian's python3 (`/usr/bin/python3`, or `$ELEVATOR_PYTHON`) and
//! `--system-site-packages`, so pandas and pytest are Debian's (setup.sh installs them);
//! pip fetches maturin from PyPI for the build. Without them the test fails saying to run
//! ./setup.sh: it never passes without having run pytest.
//!
//! The wheel is built in cargo's dev profile into this build's own target directory, so it
//! reuses the crates `cargo test` has just compiled (about 20 s instead of a 2-minute
//! release build from scratch); `pip install ./python` by hand builds the release profile.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const SETUP: &str = "run ./setup.sh (it installs python3-venv, python3-pip, python3-dev, \
                     python3-pandas and python3-pytest)";

/// Debian's python3, which setup.sh gives pandas and pytest.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("ELEVATOR_PYTHON") {
        return PathBuf::from(p);
    }
    let debian = Path::new("/usr/bin/python3");
    if debian.is_file() {
        debian.to_path_buf()
    } else {
        PathBuf::from("python3")
    }
}

/// The target directory this test binary was built in (`.../debug/deps/python-*`'s).
fn target_dir() -> PathBuf {
    let elevator = Path::new(env!("CARGO_BIN_EXE_elevator"));
    elevator.parent().and_then(Path::parent).expect("target/<profile>/elevator").to_path_buf()
}

fn run(what: &str, cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot start: {e}; {SETUP}"));
    eprintln!("--- {what}: {}", out.status);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn pip_install_and_pytest() {
    let dir = std::env::temp_dir().join(format!("elevator-python-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let venv = dir.join("venv");
    let python = python();

    let out = run(
        "python3 -m venv",
        Command::new(&python).args(["-m", "venv", "--system-site-packages"]).arg(&venv),
    );
    assert!(out.status.success(), "{} cannot make a venv: {SETUP}", python.display());
    let vpython = venv.join("bin/python");

    let out = run(
        "import pandas, pytest",
        Command::new(&vpython).args(["-c", "import pandas, pytest, pip"]),
    );
    assert!(out.status.success(), "the venv has no pandas, pytest or pip: {SETUP}");

    let started = Instant::now();
    let out = run(
        "pip install ./python",
        Command::new(&vpython)
            .args(["-m", "pip", "install", "--no-input", "--disable-pip-version-check"])
            .arg(repo().join("python"))
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", target_dir())
            .env("MATURIN_PEP517_ARGS", "--profile dev"),
    );
    let build_s = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "pip install ./python failed (maturin comes from PyPI; the build needs python3-dev): \
         {SETUP}"
    );

    // Run from the temp dir, so `import elevator` is the installed package, not python/.
    let started = Instant::now();
    let out = run(
        "pytest python/tests",
        Command::new(&vpython)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA"])
            .arg(repo().join("python/tests"))
            .current_dir(&dir)
            .env("ELEVATOR_BIN", env!("CARGO_BIN_EXE_elevator")),
    );
    let pytest_s = started.elapsed().as_secs_f64();
    eprintln!("wheel build and install {build_s:.1} s, pytest {pytest_s:.1} s");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "pytest failed:\n{stdout}");
    assert!(stdout.contains(" passed"), "pytest ran no test:\n{stdout}");
    assert!(!stdout.contains(" skipped"), "pytest skipped tests:\n{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
