//! SHA-256 digests as lowercase hex, the one digest every vault identity, hash and row id uses.

use sha2::{Digest, Sha256};

/// `sha256(bytes)` as 64 lowercase hex characters.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `sha256` of `parts` joined by NUL bytes, as lowercase hex (the shape of every vault identity digest:
/// spec/vault-facts.md "Identity", "Reconcile").
pub fn sha256_nul_joined<S: AsRef<[u8]>>(parts: &[S]) -> String {
    let mut h = Sha256::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.update([0u8]);
        }
        h.update(p.as_ref());
    }
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(sha256_nul_joined(&["a", "b"]), sha256_hex(b"a\0b"));
        assert_eq!(sha256_nul_joined::<&str>(&[]), sha256_hex(b""));
    }
}
