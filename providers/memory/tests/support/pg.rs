//! A throwaway PostgreSQL cluster for tests: `initdb` into a temporary folder, `pg_ctl start`
//! on a free local port (with its socket in the folder too), one fresh database per test, and
//! `pg_ctl stop` when the test process ends — by a watcher that outlives a panic or a kill.
//!
//! The binaries are found in `$CTXKIT_PG_BIN`, `pg_config --bindir`,
//! `/usr/lib/postgresql/*/bin` or the `PATH`. PostgreSQL refuses to run as root, so as root the
//! cluster runs as the `postgres` user (`runuser`). Without PostgreSQL the suite is skipped with
//! one line (a failure under `CTXKIT_EXTERNAL_SUITES=1`, which `.ci/run` sets).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::suites;

/// The superuser's password (the wrong-password test uses another).
pub(crate) const PASSWORD: &str = "ctxkit-test-Pw-7731";
const USER: &str = "ctxkit";

/// A running cluster.
pub(crate) struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    run_as: Option<String>,
}

/// The cluster of this test process, started on first use; `None` (after one line saying
/// so) when PostgreSQL is not installed.
pub(crate) fn cluster() -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Option<Cluster>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| {
            let initdb = bin_dir()
                .map(|b| b.join("initdb"))
                .unwrap_or_else(|| PathBuf::from("initdb"));
            let found = suites::required(initdb, "the PostgreSQL memory suite")?;
            Some(Cluster::start(
                found.parent().unwrap_or(Path::new("/")).to_path_buf(),
            ))
        })
        .as_ref()
}

fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CTXKIT_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && dir.join("initdb").exists() {
            return Some(dir);
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists())
        .collect();
    versions.sort();
    if let Some(newest) = versions.pop() {
        return Some(newest);
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).find(|p| p.join("initdb").exists()))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl Cluster {
    fn start(bin: PathBuf) -> Cluster {
        let dir = std::env::temp_dir().join(format!("ctxkit-pg-{}-{}", std::process::id(), nanos()));
        std::fs::create_dir_all(&dir).unwrap();
        let run_as = is_root().then(|| "postgres".to_string());
        let port = free_port();
        let cluster = Cluster {
            bin,
            dir,
            port,
            run_as,
        };
        std::fs::write(cluster.dir.join("pw"), PASSWORD).unwrap();
        let tls = cluster.self_signed_certificate();
        if let Some(user) = &cluster.run_as {
            let ok = Command::new("chown")
                .args(["-R", user])
                .arg(&cluster.dir)
                .status()
                .unwrap();
            assert!(ok.success(), "cannot hand {} to {user}", cluster.dir.display());
        }
        cluster.run(
            "initdb",
            &[
                "-D",
                &cluster.data(),
                "-U",
                USER,
                "--pwfile",
                &cluster.dir.join("pw").to_string_lossy(),
                "--auth",
                "scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200",
            cluster.port,
            cluster.dir.display()
        );
        if tls {
            let dir = cluster.dir.display();
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={dir}/server.crt -c ssl_key_file={dir}/server.key"
            ));
        }
        let log = cluster.dir.join("log").to_string_lossy().into_owned();
        cluster.run(
            "pg_ctl",
            &["-D", &cluster.data(), "-o", &options, "-l", &log, "-w", "start"],
        );
        cluster.stop_when_process_ends();
        cluster
    }

    /// A certificate for 127.0.0.1 that no authority signed, made with `openssl` when it is
    /// installed: the server then offers TLS (the tests' URLs say `sslmode=disable`).
    fn self_signed_certificate(&self) -> bool {
        let openssl = openssl();
        if !openssl.exists() {
            return false;
        }
        let made = Command::new(openssl)
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
            ])
            .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
            .args(["-addext", "basicConstraints=critical,CA:FALSE"])
            .args(["-addext", "subjectAltName=IP:127.0.0.1", "-keyout"])
            .arg(self.dir.join("server.key"))
            .arg("-out")
            .arg(self.dir.join("server.crt"))
            .output()
            .unwrap();
        assert!(
            made.status.success(),
            "openssl: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        // PostgreSQL reads only a key nobody else can.
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(self.dir.join("server.key"), private).unwrap();
        true
    }

    fn data(&self) -> String {
        self.dir.join("data").to_string_lossy().into_owned()
    }

    /// Run one of the cluster's binaries (as the `postgres` user when we are root); its output.
    fn run(&self, tool: &str, args: &[&str]) -> String {
        let exe = self.bin.join(tool);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let out = cmd.args(args).env("PGPASSWORD", PASSWORD).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A watcher stops the cluster and removes its folder once this process is gone, whether it
    /// ended normally, panicked or was killed.
    fn stop_when_process_ends(&self) {
        let pg_ctl = self.bin.join("pg_ctl");
        let stop = match &self.run_as {
            Some(user) => format!(
                "runuser -u {user} -- {} -D {} -m immediate stop",
                pg_ctl.display(),
                self.data()
            ),
            None => format!("{} -D {} -m immediate stop", pg_ctl.display(), self.data()),
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; {stop} >/dev/null 2>&1; rm -rf {dir}",
            pid = std::process::id(),
            dir = self.dir.display()
        );
        // Detached on purpose: it must outlive this process, so it is never waited for.
        #[allow(clippy::zombie_processes)]
        Command::new("sh")
            .args(["-c", &script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
    }

    /// A fresh, empty database, and its URL.
    pub(crate) fn database(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("t{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let port = self.port.to_string();
        self.run("createdb", &["-h", "127.0.0.1", "-p", &port, "-U", USER, &name]);
        self.url(&name, PASSWORD)
    }

    /// The URL of database `name` with this password.
    pub(crate) fn url(&self, name: &str, password: &str) -> String {
        format!(
            "postgres://{USER}:{password}@127.0.0.1:{}/{name}?sslmode=disable",
            self.port
        )
    }

    /// Run SQL on database `name` with `psql`; what it printed (values only, `|` between
    /// columns).
    pub(crate) fn psql(&self, name: &str, sql: &str) -> String {
        let port = self.port.to_string();
        self.run(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                USER,
                "-d",
                name,
                "-v",
                "ON_ERROR_STOP=1",
                "--tuples-only",
                "--no-align",
                "-c",
                sql,
            ],
        )
    }

    /// The database name of a URL made by [`database`](Self::database).
    pub(crate) fn name_of(url: &str) -> &str {
        url.rsplit('/')
            .next()
            .unwrap_or("")
            .split('?')
            .next()
            .unwrap_or("")
    }

    /// The port the cluster listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

/// `openssl` on the `PATH` (it makes the cluster's certificate), else its bare name.
pub(crate) fn openssl() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("openssl"))
                .find(|p| p.exists())
        })
        .unwrap_or_else(|| PathBuf::from("openssl"))
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// A local port nobody listens on now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}
