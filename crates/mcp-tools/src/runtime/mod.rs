//! What the commands share.

pub(crate) mod auth;
pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod diff;
pub(crate) mod exit;
pub(crate) mod logs;
pub(crate) mod merge;
pub(crate) mod models;
pub(crate) mod output;
pub(crate) mod shell;
pub(crate) mod stdio;
pub(crate) mod store;
