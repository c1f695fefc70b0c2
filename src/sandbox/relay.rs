//! The scripted model's port, relayed into a network namespace that has
//! loopback only. Inside, the helper listens on `127.0.0.1:<port>` and
//! carries each connection to a unix socket; outside, reel carries each
//! connection from that socket to the model server. A pathname socket
//! crosses network namespaces; nothing else does.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::thread;

/// reel's side: accepts on the unix socket, connects to the model.
pub struct HostRelay {
    socket: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    _dir: tempfile::TempDir,
}

impl HostRelay {
    /// Listens on a socket in a fresh private directory (outside the run
    /// directory, so the agent cannot replace it).
    pub fn start(model_port: u16) -> io::Result<HostRelay> {
        let dir = tempfile::Builder::new().prefix("reel-relay-").tempdir()?;
        let socket = dir.path().join("model.sock");
        let listener = UnixListener::bind(&socket)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        thread::Builder::new()
            .name("reel-model-relay".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { break };
                    if let Ok(model) = TcpStream::connect(("127.0.0.1", model_port)) {
                        splice_unix_tcp(conn, model);
                    }
                }
            })?;
        Ok(HostRelay {
            socket,
            stop,
            _dir: dir,
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for HostRelay {
    fn drop(&mut self) {
        // Wake the accept loop so its thread sees the flag and ends (closing
        // the listener) before the directory goes.
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = UnixStream::connect(&self.socket);
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
