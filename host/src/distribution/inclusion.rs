//! That a Rekor entry is in its log: the Merkle inclusion proof of the entry's body up to
//! a tree root (RFC 9162, 2.1.3.2), and the checkpoint, a signed note (C2SP
//! `signed-note`, `tlog-checkpoint`) in which the log commits to that root and size.
//! Rekor v2 gives no signed entry timestamp: this is how its entries are checked.

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::trusted_root::Log;

/// An entry's inclusion proof, as a Sigstore bundle carries it.
pub struct Proof {
    /// The entry's index in the tree the proof is for.
    pub index: u64,
    pub tree_size: u64,
    pub root_hash: Vec<u8>,
    /// The sibling hashes from the leaf up.
    pub hashes: Vec<Vec<u8>>,
    /// The signed note committing to `root_hash` at `tree_size`; absent in some
    /// bundles of version 0.1.
    pub checkpoint: Option<String>,
}

/// Checks that `body` (the entry as logged) is in `log` by `proof`; returns whether the
/// log signed the tree's root (a proof without a checkpoint only shows the path is whole).
///
/// # Errors
///
/// Saying which part does not hold.
pub fn verify(log: &Log, body: &[u8], proof: &Proof) -> Result<bool, String> {
    let leaf: [u8; 32] = Sha256::new().chain_update([0]).chain_update(body).finalize().into();
    if root_of(leaf, proof.index, proof.tree_size, &proof.hashes).is_none_or(|root| root[..] != proof.root_hash[..]) {
        return Err("its inclusion proof does not lead to the tree root it names".into());
    }
    let Some(note) = &proof.checkpoint else {
        return Ok(false);
    };
    let (size, root) = checkpoint(log, note)?;
    if size != proof.tree_size || root != proof.root_hash {
        return Err("its checkpoint is for another tree than its inclusion proof".into());
    }
    Ok(true)
}

/// The root a leaf at `index` of a tree of `size` leads to through `path`
/// (RFC 9162, 2.1.3.2); `None` where the path does not fit the tree.
fn root_of(leaf: [u8; 32], index: u64, size: u64, path: &[Vec<u8>]) -> Option<[u8; 32]> {
    let node = |left: &[u8], right: &[u8]| -> [u8; 32] {
        Sha256::new().chain_update([1]).chain_update(left).chain_update(right).finalize().into()
    };
    if index >= size {
        return None;
    }
    let (mut f, mut s, mut r) = (index, size - 1, leaf);
    for p in path {
        if p.len() != 32 || s == 0 {
            return None;
        }
        if f & 1 == 1 || f == s {
            r = node(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    (s == 0).then_some(r)
}

/// The most signature lines a checkpoint is read with (the log's and its witnesses').
const MAX_SIGNATURES: usize = 100;

/// The tree size and root a checkpoint signed by `log` commits to. The note's text is
/// its origin (the log's host, and for Rekor v1 ` - TREE ID`), the size, the root
/// (base64) and optional lines; after a blank line come signature lines
/// `— NAME BASE64(KEY HINT ‖ SIGNATURE)`, of the log and of witnesses that cosign it. One
/// must be the log's: its name the log's host, its key hint the first four bytes of the
/// log's id, its signature the log key's.
fn checkpoint(log: &Log, note: &str) -> Result<(u64, Vec<u8>), String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let (text, signatures) =
        note.split_once("\n\n").ok_or("its checkpoint is not a signed note (no blank line before signatures)")?;
    let text = format!("{text}\n");
    let mut lines = text.lines();
    let origin = lines.next().unwrap_or_default();
    let size = lines.next().and_then(|s| s.parse::<u64>().ok());
    let root = lines.next().and_then(|r| b64.decode(r).ok());
    let (false, Some(size), Some(root)) = (origin.is_empty(), size, root) else {
        return Err("its checkpoint does not name an origin, a tree size and a root hash".into());
    };
    if origin != log.host && !origin.strip_prefix(log.host.as_str()).is_some_and(|rest| rest.starts_with(" - ")) {
        return Err(format!("its checkpoint is of {origin}, not of the log {}", log.host));
    }
    if signatures.lines().count() > MAX_SIGNATURES {
        return Err(format!("its checkpoint has more than {MAX_SIGNATURES} signatures"));
    }
    let signed_by_log = signatures.lines().filter_map(|line| line.strip_prefix("\u{2014} ")).any(|line| {
        let Some((name, signature)) = line.rsplit_once(' ') else {
            return false;
        };
        let Ok(signature) = b64.decode(signature) else {
            return false;
        };
        name == log.host
            && signature.len() > 4
            && signature[..4] == log.id[..4]
            && log.verifies(text.as_bytes(), &signature[4..])
    });
    if !signed_by_log {
        return Err("its checkpoint carries no signature of the log that verifies".into());
    }
    Ok((size, root))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(bytes: &[u8]) -> [u8; 32] {
        Sha256::digest(bytes).into()
    }

    #[test]
    fn an_inclusion_proof_leads_to_the_root_of_its_tree_only_from_its_own_leaf_and_index() {
        // A tree of five leaves: root = H(1 ‖ H(1 ‖ H(1 ‖ l0 ‖ l1) ‖ H(1 ‖ l2 ‖ l3)) ‖ l4).
        let leaves: Vec<[u8; 32]> = (0..5u8).map(|i| hash(&[0, i])).collect();
        let node = |l: &[u8], r: &[u8]| hash(&[&[1][..], l, r].concat());
        let (n01, n23) = (node(&leaves[0], &leaves[1]), node(&leaves[2], &leaves[3]));
        let n0123 = node(&n01, &n23);
        let root = node(&n0123, &leaves[4]);
        let path = |hashes: &[&[u8; 32]]| hashes.iter().map(|h| h.to_vec()).collect::<Vec<_>>();
        assert_eq!(root_of(leaves[2], 2, 5, &path(&[&leaves[3], &n01, &leaves[4]])), Some(root));
        assert_eq!(root_of(leaves[4], 4, 5, &path(&[&n0123])), Some(root));
        assert_ne!(root_of(leaves[3], 2, 5, &path(&[&leaves[3], &n01, &leaves[4]])), Some(root));
        assert_ne!(root_of(leaves[2], 3, 5, &path(&[&leaves[3], &n01, &leaves[4]])), Some(root));
        assert_eq!(root_of(leaves[4], 5, 5, &path(&[&n0123])), None, "an index outside the tree");
        assert_eq!(root_of(leaves[2], 2, 5, &path(&[&leaves[3], &n01])), None, "a path too short");
    }
}
