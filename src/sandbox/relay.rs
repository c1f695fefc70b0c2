//! Loopback ports (the scripted model's, reel's MCP fronts') relayed into a
//! network namespace that has loopback only. Inside, the helper listens on
//! `127.0.0.1:<port>` for each and carries each connection to that port's
//! unix socket; outside, reel carries each connection from the socket to the
//! port on the host. A pathname socket crosses network namespaces; nothing
//! else does.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

/// The socket of `port` in the relay's directory.
pub fn socket_name(port: u16) -> String {
    format!("{port}.sock")
}

/// reel's side: accepts on each port's unix socket, connects to the port.
pub struct HostRelay {
    sockets: Vec<PathBuf>,
    stop: Arc<AtomicBool>,
    dir: tempfile::TempDir,
}

impl HostRelay {
    /// Listens on a socket per port in a fresh private directory (outside
    /// the run directory, so the agent cannot replace them).
    pub fn start(ports: &[u16]) -> io::Result<HostRelay> {
        let dir = tempfile::Builder::new().prefix("reel-relay-").tempdir()?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut sockets = Vec::new();
        for &port in ports {
            let socket = dir.path().join(socket_name(port));
            let listener = UnixListener::bind(&socket)?;
            sockets.push(socket);
            let stopped = stop.clone();
            thread::Builder::new()
                .name(format!("reel-relay-{port}"))
                .spawn(move || {
                    for conn in listener.incoming() {
                        if stopped.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(conn) = conn else { break };
                        if let Ok(target) = TcpStream::connect(("127.0.0.1", port)) {
                            splice_unix_tcp(conn, target);
                        }
                    }
                })?;
        }
        Ok(HostRelay { sockets, stop, dir })
    }

    /// The directory holding the sockets.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for HostRelay {
    fn drop(&mut self) {
        // Wake each accept loop so its thread sees the flag and ends (closing
        // the listener) before the directory goes.
        self.stop.store(true, Ordering::SeqCst);
        for socket in &self.sockets {
            let _ = UnixStream::connect(socket);
        }
    }
}

/// The helper's side, inside the namespace: accepts on loopback, connects
/// to the host socket. Runs for the life of the helper.
pub fn serve_inside(listener: TcpListener, socket: PathBuf) {
    let _ = thread::Builder::new()
        .name("reel-sandbox-relay".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                if let Ok(host) = UnixStream::connect(&socket) {
                    splice_unix_tcp(host, conn);
                }
            }
        });
}

/// Copies both ways until each side closes, on two threads.
fn splice_unix_tcp(unix: UnixStream, tcp: TcpStream) {
    let (Ok(unix2), Ok(tcp2)) = (unix.try_clone(), tcp.try_clone()) else {
        return;
    };
    let _ = thread::Builder::new().spawn(move || {
        let (mut from, mut to) = (&unix, &tcp);
        let _ = io::copy(&mut from, &mut to);
        let _ = tcp.shutdown(Shutdown::Write);
    });
    let _ = thread::Builder::new().spawn(move || {
        let (mut from, mut to) = (&tcp2, &unix2);
        let _ = io::copy(&mut from, &mut to);
        let _ = unix2.shutdown(Shutdown::Write);
    });
}
