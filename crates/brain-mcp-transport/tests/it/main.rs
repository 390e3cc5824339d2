//! The transport against the testkit: both eras over HTTP, stdio, discovery, and faults.

mod auto;
mod discovery;
mod layers;
mod legacy;
mod modern;
mod oauth;
mod oauth_hostile;
mod oauth_secrets;
mod oauth_servers;
mod refusals;
mod statuses;
mod stdio;
mod support;
mod warm;
