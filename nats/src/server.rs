//! [`LocalServer`]: a `nats-server` on 127.0.0.1 for tests, examples and
//! benchmarks, stopped when dropped.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `nats-server` child process on 127.0.0.1 and a free port, killed
/// (and waited for) on drop.
///
/// ```no_run
/// let server = stepsched_nats::LocalServer::start().expect("nats-server runs");
/// println!("{}", server.url()); // nats://127.0.0.1:PORT
/// ```
#[derive(Debug)]
pub struct LocalServer {
    child: Option<Child>,
    port: u16,
}

impl LocalServer {
    /// Starts `nats-server` (from `PATH`, or `NATS_SERVER`) on a free port
    /// and waits up to 10 s for it to take connections.
    ///
    /// # Errors
    ///
    /// If the binary is missing (the error says how to install it), or
    /// the server exits or does not listen in time.
    pub fn start() -> io::Result<LocalServer> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        LocalServer::start_on(port)
    }

    /// Starts it on `port` (e.g. again after [`stop`](Self::stop), for a
    /// server restarted under its clients).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_on(port: u16) -> io::Result<LocalServer> {
        let binary = std::env::var("NATS_SERVER").unwrap_or_else(|_| "nats-server".into());
        let child = Command::new(&binary)
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot run `{binary}` ({e}): install it (`apt-get install -y nats-server`) \
                         or set NATS_SERVER to its path"
                    ),
                )
            })?;
        let mut server = LocalServer {
            child: Some(child),
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(server);
            }
            let child = server.child.as_mut().expect("running");
            if let Some(status) = child.try_wait()? {
                return Err(io::Error::other(format!(
                    "`{binary}` exited ({status}) before listening on port {port}"
                )));
            }
            if Instant::now() > deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("`{binary}` did not listen on port {port} within 10 s"),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server now (as dropping it does).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.stop();
    }
}
