//! A throw-away PostgreSQL server for the fleet's tests (issue 26): Debian's `postgresql`
//! package is installed with apt-get when its `initdb` is missing (never a reason to skip),
//! a cluster is made with `initdb` in a temp dir and run with `pg_ctl` on a free 127.0.0.1
//! port (its socket in the same dir), as the unprivileged `postgres` user when the tests
//! run as root (PostgreSQL refuses to run as root). Stopped (immediately) and removed when
//! dropped; [`Pg::stop`] and [`Pg::start_again`] stop and restart it in the middle of
//! a test, on the same port and data.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use super::installs::{ensure_debian_packages, run};

/// The user every test connects as (trust authentication, loopback only).
pub const USER: &str = "searchgate";

/// A running throw-away server.
pub struct Pg {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
    as_postgres: bool,
}

/// The newest installed PostgreSQL's `bin` directory, installing the package if none.
fn bin_dir() -> PathBuf {
    ensure_debian_packages(
        "ls /usr/lib/postgresql/*/bin/initdb",
        &["postgresql", "postgresql-contrib"],
    );
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("/usr/lib/postgresql after installing postgresql")
        .filter_map(Result::ok)
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, b)| b)
        .expect("an initdb under /usr/lib/postgresql/*/bin")
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// A port of 127.0.0.1 free now (for a component that must be told its port).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("a free port");
    l.local_addr().unwrap().port()
}

impl Pg {
    /// Makes and starts a new cluster; returns once it accepts connections.
    pub fn start() -> Pg {
        let bin = bin_dir();
        let as_postgres = is_root();
        let dir = tempfile::Builder::new()
            .prefix("searchgate-pg-")
            .tempdir()
            .expect("temp dir");
        if as_postgres {
            // The cluster's files belong to `postgres` (the package made that user).
            run(
                Command::new("chown")
                    .arg("postgres:postgres")
                    .arg(dir.path()),
                "chown the PostgreSQL test dir",
            );
        }
        let mut pg = Pg {
            bin,
            dir,
            port: 0,
            as_postgres,
        };
        let data = pg.data();
        let out = pg
            .command("initdb")
            .args([
                "--auth=trust",
                "--username",
                USER,
                "--encoding=UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(&data)
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // A port taken between choosing it and binding it: choose another.
        for _ in 0..5 {
            pg.port = free_port();
            if pg.try_start() {
                return pg;
            }
        }
        panic!("PostgreSQL did not start:\n{}", pg.log());
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// `bin/<tool>`, run as `postgres` when the tests run as root.
    fn command(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        }
    }

    fn try_start(&self) -> bool {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.port,
            self.dir.path().display()
        );
        self.command("pg_ctl")
            .args(["-w", "-t", "60", "-D"])
            .arg(self.data())
            .args(["-l"])
            .arg(self.log_path())
            .args(["-o", &opts, "start"])
            .output()
            .is_ok_and(|o| o.status.success())
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// A new, empty database; its URL (`postgres://searchgate@127.0.0.1:PORT/NAME`).
    pub fn database(&self) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "sg{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let mut c = postgres::Client::connect(&self.url("postgres"), postgres::NoTls)
            .unwrap_or_else(|e| panic!("connect to the test PostgreSQL: {e}\n{}", self.log()));
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("CREATE DATABASE");
        self.url(&name)
    }

    /// The URL of database `db`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{db}", self.port)
    }

    /// Stops the server (fast: open connections are closed, as in a restart).
    pub fn stop(&self) {
        let out = self
            .command("pg_ctl")
            .args(["-w", "-m", "fast", "-D"])
            .arg(self.data())
            .arg("stop")
            .output()
            .expect("pg_ctl stop");
        assert!(out.status.success(), "pg_ctl stop:\n{}", self.log());
    }

    /// Starts it again on the same port and data.
    pub fn start_again(&self) {
        assert!(
            self.try_start(),
            "PostgreSQL did not start again:\n{}",
            self.log()
        );
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args(["-m", "immediate", "-D"])
            .arg(self.data())
            .arg("stop")
            .output();
        // The temp dir (the cluster's files) goes with `self.dir`.
    }
}
