//! The transport against the testkit: both eras over HTTP, stdio, discovery, and faults.

mod auto;
mod discovery;
mod legacy;
mod modern;
mod stdio;
mod support;
