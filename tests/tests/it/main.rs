//! Reliability: the fault matrix, leak accounting, the secrets check and a short soak.

mod fleet;
mod leaks;
mod listing;
mod matrix;
mod reconnect;
mod scripted;
mod soak;
