//! `brain-bench proxy --target URL|HOST:PORT --delay-ms D`: a TCP proxy on loopback that
//! adds D ms of latency in each direction (so 2·D of round-trip time), for the benchmark's
//! simulated network (kernel `netem` needs privileges this machine does not give).
//!
//! It models latency, not bandwidth: every chunk is stamped when it is read and written
//! on at stamp + D, in order, in both directions; a read end (FIN) is passed on the same
//! way, D later. Memory is bounded: each direction holds at most [`QUEUE`] chunks of at
//! most [`CHUNK`] bytes, and reading stops (TCP back-pressure) while its queue is full.
//! Plain threads with `std::thread::sleep` (nanosleep) keep the delay within tens of
//! microseconds, where a tokio timer would round it up to the next millisecond.
//!
//! Prints `LISTENING <url>` (the target URL with the proxy's address, or
//! `127.0.0.1:PORT` for a HOST:PORT target) once it accepts connections, and runs until
//! its stdin closes or it is killed.

use std::{
    io::{Read, Write},
    net::{Shutdown, TcpListener, TcpStream},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use anyhow::Context as _;

/// The largest chunk read at once.
const CHUNK: usize = 64 * 1024;
/// Chunks waiting to be written, per direction.
const QUEUE: usize = 64;

/// Runs the proxy until stdin closes.
pub(super) fn run(target: &str, delay: Duration) -> anyhow::Result<()> {
    let (address, url) = match target.strip_prefix("http://") {
        Some(rest) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            (authority.to_owned(), Some(path.to_owned()))
        }
        None => (target.to_owned(), None),
    };
    let listener = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1")?;
    let local = listener.local_addr()?;
    match url {
        Some(path) => println!("LISTENING http://{local}{path}"),
        None => println!("LISTENING {local}"),
    }
    std::io::stdout().flush()?;
    // Ends the process when stdin closes (the harness holds it open while it needs us).
    thread::spawn(|| {
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        std::process::exit(0);
    });
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        let address = address.clone();
        thread::spawn(move || {
            if let Err(error) = relay(client, &address, delay) {
                eprintln!("brain-bench proxy: {error:#}");
            }
        });
    }
    Ok(())
}

/// One connection: connect to the target, then a pair of delayed pipes.
fn relay(client: TcpStream, target: &str, delay: Duration) -> anyhow::Result<()> {
    let server = TcpStream::connect(target).with_context(|| format!("connecting to {target}"))?;
    // The proxy must not add a Nagle delay of its own: what the ends send is written
    // on as it was read.
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let upstream = pipe(client.try_clone()?, server.try_clone()?, delay);
    let downstream = pipe(server, client, delay);
    let _ = upstream.join();
    let _ = downstream.join();
    Ok(())
}

/// What the reader hands to the writer.
enum Item {
    Data(Vec<u8>, Instant),
    End(Instant),
}

/// Copies `from` to `to`, each chunk `delay` after it was read; returns when both are done.
fn pipe(mut from: TcpStream, mut to: TcpStream, delay: Duration) -> thread::JoinHandle<()> {
    let (tx, rx) = mpsc::sync_channel::<Item>(QUEUE);
    let writer = {
        let from = from.try_clone();
        thread::spawn(move || {
            for item in rx {
                let (data, due) = match item {
                    Item::Data(data, due) => (Some(data), due),
                    Item::End(due) => (None, due),
                };
                let now = Instant::now();
                if due > now {
                    thread::sleep(due - now);
                }
                match data {
                    Some(data) => {
                        if to.write_all(&data).is_err() {
                            // The receiver is gone: stop the reader too.
                            if let Ok(from) = &from {
                                let _ = from.shutdown(Shutdown::Read);
                            }
                            return;
                        }
                    }
                    None => {
                        let _ = to.shutdown(Shutdown::Write);
                        return;
                    }
                }
            }
        })
    };
    thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(Item::End(Instant::now() + delay));
                    break;
                }
                Ok(n) => {
                    if tx
                        .send(Item::Data(buf[..n].to_vec(), Instant::now() + delay))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
        drop(tx);
        let _ = writer.join();
    })
}
