//! [`RefusedPort`]: a loopback address where connections are refused, reserved for as long
//! as the value lives.

use std::net::SocketAddr;

/// A loopback port where every connection is refused (RST), held by a socket that is bound
/// but never listens. A port that was merely bound and released is not safe for this: the
/// next server to start in a parallel test may take it, and answer.
#[derive(Debug)]
pub struct RefusedPort {
    socket: tokio::net::TcpSocket,
}

impl RefusedPort {
    /// Reserves a free loopback port.
    ///
    /// # Errors
    /// No socket can be made or bound to a loopback port.
    pub fn new() -> std::io::Result<Self> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        Ok(Self { socket })
    }

    /// The reserved address.
    ///
    /// # Panics
    /// If the OS cannot tell a bound socket's address (it always can).
    pub fn addr(&self) -> SocketAddr {
        self.socket
            .local_addr()
            .expect("a bound socket has an address")
    }

    /// `http://127.0.0.1:PORT/mcp` on the reserved port.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr())
    }
}
