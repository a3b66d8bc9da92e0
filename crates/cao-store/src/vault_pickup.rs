//! What this process remembers about the vault pickup check (`cao_ops::vault::pickup`), kept per opened
//! [`crate::Store`] (shared by its clones) and per vault id, so a read does not redo work another read of the same
//! process just did:
//!
//! - the digest of the last listing of the vault's mapped folders that matched the stored note rows, together with
//!   the stored projection token read with it ([`crate::Reads::vault_projection_token`]): while a new listing has
//!   the same digest and the token is unchanged, the note rows still match and need not be loaded;
//! - when the last walk of the vault ended, so a long-running process (the HTTP server, the MCP stdio server) walks
//!   at most once per walk interval ([`crate::Store::set_vault_walk_interval`]; unset = walk on every read, what a
//!   one-shot command wants).
//!
//! Nothing here is durable or shared between processes: a new process starts empty and checks fully.

use std::time::{Duration, Instant};

/// The remembered pickup state of one vault (module docs). `Default` = nothing remembered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VaultPickupMemo {
    /// `(listing digest, projection token)` of the last check that found the listing equal to the stored note
    /// rows; `None` when no check did (or the store held no token to pair with it).
    pub matched: Option<(String, String)>,
    /// When the last walk of the vault's mapped folders ended (checked or reconciled); `None` = never.
    pub walked_at: Option<Instant>,
}

impl VaultPickupMemo {
    /// Whether a walk that ended at [`VaultPickupMemo::walked_at`] is younger than `interval` at `now`.
    pub fn walked_within(&self, interval: Duration, now: Instant) -> bool {
        self.walked_at
            .is_some_and(|t| now.checked_duration_since(t).is_some_and(|age| age < interval))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_is_recent_only_within_the_interval() {
        let now = Instant::now();
        let never = VaultPickupMemo::default();
        assert!(!never.walked_within(Duration::from_secs(1), now));
        let memo = VaultPickupMemo {
            matched: None,
            walked_at: Some(now),
        };
        assert!(memo.walked_within(Duration::from_secs(1), now + Duration::from_millis(999)));
        assert!(!memo.walked_within(Duration::from_secs(1), now + Duration::from_secs(1)));
        assert!(
            !memo.walked_within(Duration::ZERO, now),
            "a zero interval never throttles"
        );
    }
}
