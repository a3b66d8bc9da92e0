//! Addresses of the summary tree: `id+n` names the line covering the `n` entries from entry `id` on (spec 001 "The
//! summary tree": n is always a power of two and id a multiple of it, so 368+8 covers entries 368 to 375 and was
//! merged from 368+4 and 372+4).
//!
//! Arithmetic: the line of entry `id` is `id+1`; the parent of `id+n` is `(id - id % 2n)+2n`; the children of `id+n`
//! (n > 1) are `id+(n/2)` and `(id + n/2)+(n/2)`; the sibling of `id+n` is `(id XOR n)+n`. Every address covers
//! entries below [`MAX_ENTRIES`], so every number fits SQLite's signed 64-bit integers.

use std::fmt;
use std::str::FromStr;

/// The largest number of entries a journal can hold: `i64::MAX` (SQLite's largest integer). An address's range
/// `[id, id + n)` always ends at or below it.
pub const MAX_ENTRIES: u64 = i64::MAX as u64;

/// Why a text or a pair of numbers is not an address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// Not of the form `<id>+<n>` with both numbers in plain decimal (no sign, spaces or leading zeros).
    #[error("{0:?} is not an address: expected <id>+<n> in decimal, such as 368+8")]
    Malformed(String),
    /// `n` is zero or not a power of two.
    #[error("{id}+{n} is not an address: n must be a power of two (1, 2, 4, ...)")]
    NotPowerOfTwo {
        /// The id given.
        id: u64,
        /// The size given.
        n: u64,
    },
    /// `id` is not a multiple of `n`.
    #[error("{id}+{n} is not an address: id must be a multiple of n (such as {aligned}+{n})")]
    Misaligned {
        /// The id given.
        id: u64,
        /// The size given.
        n: u64,
        /// The aligned id below it.
        aligned: u64,
    },
    /// The range ends beyond [`MAX_ENTRIES`] (or a number does not fit 64 bits).
    #[error("{address} is not an address: it ends beyond entry {MAX_ENTRIES}")]
    Overflow {
        /// The address as given (at most 64 characters).
        address: String,
    },
}

/// A line of the summary tree: the `n` entries from `id` on. Always well formed (see the module docs). Ordered by
/// `id`, then `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address {
    id: u64,
    n: u64,
}

impl Address {
    /// The address `id+n`.
    ///
    /// Errors: [`AddressError::NotPowerOfTwo`], [`AddressError::Misaligned`], [`AddressError::Overflow`] (the range
    /// must end at or below [`MAX_ENTRIES`]).
    pub fn new(id: u64, n: u64) -> Result<Address, AddressError> {
        if !n.is_power_of_two() {
            return Err(AddressError::NotPowerOfTwo { id, n });
        }
        if !id.is_multiple_of(n) {
            return Err(AddressError::Misaligned {
                id,
                n,
                aligned: id - id % n,
            });
        }
        match id.checked_add(n) {
            Some(end) if end <= MAX_ENTRIES => Ok(Address { id, n }),
            _ => Err(AddressError::Overflow {
                address: format!("{id}+{n}"),
            }),
        }
    }

    /// The line of entry `id`: `id+1`. Errors: [`AddressError::Overflow`] when `id >= MAX_ENTRIES`.
    pub fn entry(id: u64) -> Result<Address, AddressError> {
        Address::new(id, 1)
    }

    /// First entry covered.
    pub fn id(self) -> u64 {
        self.id
    }

    /// Number of entries covered (a power of two).
    pub fn n(self) -> u64 {
        self.n
    }

    /// One past the last entry covered: `id + n`.
    pub fn end(self) -> u64 {
        self.id + self.n
    }

    /// Whether this is an entry line (`n == 1`).
    pub fn is_entry(self) -> bool {
        self.n == 1
    }

    /// The line this one merges into: `(id - id % 2n)+2n`; `None` when that range would end beyond
    /// [`MAX_ENTRIES`].
    pub fn parent(self) -> Option<Address> {
        let n2 = self.n.checked_mul(2)?;
        Address::new(self.id - self.id % n2, n2).ok()
    }

    /// The two lines this one is merged from, `id+(n/2)` and `(id + n/2)+(n/2)`; `None` for an entry line.
    pub fn children(self) -> Option<(Address, Address)> {
        if self.n == 1 {
            return None;
        }
        let half = self.n / 2;
        Some((
            Address { id: self.id, n: half },
            Address {
                id: self.id + half,
                n: half,
            },
        ))
    }

    /// The other child of this line's parent: `(id XOR n)+n`; `None` when the parent does not exist.
    pub fn sibling(self) -> Option<Address> {
        self.parent()?;
        Some(Address {
            id: self.id ^ self.n,
            n: self.n,
        })
    }

    /// Whether this line's range contains `other`'s.
    pub fn contains(self, other: Address) -> bool {
        self.id <= other.id && other.end() <= self.end()
    }

    /// Whether this line covers entry `entry`.
    pub fn covers(self, entry: u64) -> bool {
        self.id <= entry && entry < self.end()
    }

    /// The zoom path from this line down to `target` (spec 001 "The inspector": `4 zooms from the view: 368+8 ›
    /// 372+4 › 374+2 › 375+1`): the lines zoom opens one after the other, each a child of the one before, ending
    /// with `target`; this line itself is not included. Empty when `target` is this line; `None` when this line
    /// does not contain `target` or `target` is not a line of this line's subtree (misaligned sizes cannot occur for
    /// two valid addresses, so containment is the only condition).
    pub fn zoom_path(self, target: Address) -> Option<Vec<Address>> {
        if !self.contains(target) {
            return None;
        }
        let mut path = Vec::new();
        let mut at = self;
        while at != target {
            let (left, right) = at.children()?;
            at = if left.contains(target) { left } else { right };
            path.push(at);
        }
        Some(path)
    }
}

impl fmt::Display for Address {
    /// `id+n`, e.g. `368+8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.id, self.n)
    }
}

impl FromStr for Address {
    type Err = AddressError;

    /// Parse `id+n` strictly: two decimal numbers of ASCII digits without sign, spaces or leading zeros (`0` itself
    /// is fine), joined by one `+`, then checked as [`Address::new`] does.
    fn from_str(s: &str) -> Result<Address, AddressError> {
        let (id, n) = s
            .split_once('+')
            .ok_or_else(|| AddressError::Malformed(s.chars().take(64).collect()))?;
        let canonical =
            |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && (t == "0" || !t.starts_with('0'));
        if !canonical(id) || !canonical(n) {
            return Err(AddressError::Malformed(s.chars().take(64).collect()));
        }
        match (id.parse::<u64>(), n.parse::<u64>()) {
            (Ok(id), Ok(n)) => Address::new(id, n),
            // Canonical decimal digits fail to parse only when the number exceeds u64.
            _ => Err(AddressError::Overflow {
                address: s.chars().take(64).collect(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_zoom_path_of_the_spec_example() {
        let a = |s: &str| s.parse::<Address>().expect("valid");
        assert_eq!(
            a("368+8").zoom_path(a("375+1")),
            Some(vec![a("372+4"), a("374+2"), a("375+1")])
        );
        assert_eq!(a("368+8").zoom_path(a("368+8")), Some(vec![]));
        assert_eq!(a("368+8").zoom_path(a("376+1")), None);
        assert_eq!(a("368+8").zoom_path(a("368+16")), None);
    }

    #[test]
    fn the_spec_example() {
        let a: Address = "368+8".parse().expect("valid");
        assert_eq!((a.id(), a.n(), a.end()), (368, 8, 376));
        assert_eq!(
            a.children(),
            Some((Address::new(368, 4).expect("a"), Address::new(372, 4).expect("a")))
        );
        assert_eq!(a.parent(), Some(Address::new(368, 16).expect("a")));
        assert_eq!(Address::new(372, 4).expect("a").parent(), Some(a));
        assert_eq!(a.sibling(), Some(Address::new(376, 8).expect("a")));
        assert_eq!(a.to_string(), "368+8");
        assert_eq!(Address::entry(7).expect("a").to_string(), "7+1");
        assert_eq!(Address::entry(7).expect("a").children(), None);
        assert!(a.contains(Address::entry(375).expect("a")) && !a.covers(376));
    }

    #[test]
    fn parsing_is_strict() {
        for bad in [
            "", "+", "1+", "+1", "1", "1+1+1", " 1+1", "1+1 ", "1 +1", "-1+1", "1+-1", "01+1", "1+01", "0x1+1",
            "1.0+1", "１+1", "a+b", "1++1",
        ] {
            assert!(
                matches!(bad.parse::<Address>(), Err(AddressError::Malformed(_))),
                "{bad:?}: {:?}",
                bad.parse::<Address>()
            );
        }
        assert!(matches!(
            "3+2".parse::<Address>(),
            Err(AddressError::Misaligned { aligned: 2, .. })
        ));
        assert!(matches!(
            "0+0".parse::<Address>(),
            Err(AddressError::NotPowerOfTwo { .. })
        ));
        assert!(matches!(
            "0+3".parse::<Address>(),
            Err(AddressError::NotPowerOfTwo { .. })
        ));
        assert!(matches!(
            "99999999999999999999+1".parse::<Address>(),
            Err(AddressError::Overflow { .. })
        ));
        let max = format!("{}+1", MAX_ENTRIES);
        assert!(
            matches!(max.parse::<Address>(), Err(AddressError::Overflow { .. })),
            "{max}"
        );
        let last = format!("{}+1", MAX_ENTRIES - 1);
        assert_eq!(last.parse::<Address>().expect("last entry").end(), MAX_ENTRIES);
        let top = format!("0+{}", 1u64 << 62);
        let a: Address = top.parse().expect("largest line");
        assert_eq!(a.parent(), None, "its parent would end beyond MAX_ENTRIES");
        assert_eq!(a.sibling(), None);
        assert_eq!("0+1".parse::<Address>(), Address::entry(0));
        assert!(
            "3+2"
                .parse::<Address>()
                .expect_err("misaligned")
                .to_string()
                .contains("2+2"),
            "the message suggests the aligned address"
        );
    }

    proptest! {
        #[test]
        fn well_formed_addresses_round_trip_and_their_arithmetic_holds(k in 0u32..40, m in 0u64..1_000_000) {
            let n = 1u64 << k;
            let a = Address::new(m * n, n).expect("aligned");
            prop_assert_eq!(a.to_string().parse::<Address>(), Ok(a));
            let p = a.parent().expect("small enough to have a parent");
            prop_assert!(p.contains(a) && p.n() == 2 * n && p.id().is_multiple_of(p.n()));
            let (l, r) = p.children().expect("parent has children");
            prop_assert!(l == a || r == a);
            prop_assert_eq!(l.end(), r.id());
            prop_assert_eq!(a.sibling(), Some(if l == a { r } else { l }));
            if let Some((cl, cr)) = a.children() {
                prop_assert_eq!(cl.parent(), Some(a));
                prop_assert_eq!(cr.parent(), Some(a));
            }
        }

        #[test]
        fn any_pair_of_numbers_is_accepted_exactly_when_well_formed(id in any::<u64>(), n in any::<u64>()) {
            let ok = n.is_power_of_two() && id.is_multiple_of(n) && id.checked_add(n).is_some_and(|e| e <= MAX_ENTRIES);
            prop_assert_eq!(Address::new(id, n).is_ok(), ok);
            prop_assert_eq!(format!("{id}+{n}").parse::<Address>().is_ok(), ok);
        }

        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,30}") {
            let _ = s.parse::<Address>();
        }
    }
}
