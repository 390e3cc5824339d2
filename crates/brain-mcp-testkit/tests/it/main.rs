//! Smoke tests of the testkit through raw HTTP and a spawned stdio server.

mod binary;
mod client;
mod faults;
mod http;
mod stdio;
