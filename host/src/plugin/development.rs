//! Development components, which only `kubewasm dev` runs: an interpreter with its SDK
//! that imports the plugin's own source at each call from a copy of the project's sources,
//! which the host opens for it read-only at [`GUEST_DIR`], so that a save acts without
//! a build.
//!
//! `kubewasm dev` marks such a component with a custom section, right after the header,
//! naming the version of the sources ([`mark`]): a save is a new file, hence a new
//! plugin version, while the code, compiled and cached once, stays the same ([`split`]).
//! Each version reads its own copy of the sources, made by `kubewasm dev` and named by
//! the version ([`sources`]): a save that does not load leaves the version that runs
//! reading what it was loaded with. The host opens the copy only when `kubewasm dev`
//! names the place of the copies for that plugin file and the file is marked; `kubewasm
//! run` names none, so no plugin it runs reads a file.

use std::path::{Path, PathBuf};

/// The custom section's name.
const SECTION: &str = "kubewasm-dev-sources";

/// Where a development component finds the copy of the project's sources.
pub const GUEST_DIR: &str = "/project";

/// The 8 bytes every component starts with: magic and layer.
const HEADER: usize = 8;

/// `component` marked as a development component whose sources are at `version` (any
/// text that changes when they do).
pub fn mark(component: &[u8], version: &str) -> Vec<u8> {
    let mut payload = Vec::new();
    leb128(&mut payload, SECTION.len());
    payload.extend_from_slice(SECTION.as_bytes());
    payload.extend_from_slice(version.as_bytes());
    let mut marked = Vec::with_capacity(component.len() + payload.len() + 6);
    marked.extend_from_slice(&component[..HEADER.min(component.len())]);
    marked.push(0);
    leb128(&mut marked, payload.len());
    marked.extend_from_slice(&payload);
    marked.extend_from_slice(&component[HEADER.min(component.len())..]);
    marked
}

/// The directory a development component of sources at `version` reads: the copy of
/// that version under `root`, where `kubewasm dev` keeps one per version; `None` for a
/// version that is no plain directory name.
pub(crate) fn sources(root: &Path, version: &str) -> Option<PathBuf> {
    let plain = !version.is_empty()
        && version != "."
        && version != ".."
        && version.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    plain.then(|| root.join(version))
}

/// The code of a marked component (without the mark) and the version of its sources;
/// `None` when `bytes` carries no mark.
pub(crate) fn split(bytes: &[u8]) -> Option<(Vec<u8>, &str)> {
    let mut reader = wasmparser::BinaryReader::new(bytes.get(HEADER..)?, 0);
    if reader.read_u8().ok()? != 0 {
        return None;
    }
    let size = usize::try_from(reader.read_var_u32().ok()?).ok()?;
    let payload = reader.read_bytes(size).ok()?;
    let end = HEADER + reader.current_position();
    let mut section = wasmparser::BinaryReader::new(payload, 0);
    if section.read_string().ok()? != SECTION {
        return None;
    }
    let version = std::str::from_utf8(section.read_bytes(section.bytes_remaining()).ok()?).ok()?;
    let mut code = Vec::with_capacity(bytes.len());
    code.extend_from_slice(&bytes[..HEADER]);
    code.extend_from_slice(&bytes[end..]);
    Some((code, version))
}

/// `value` as an unsigned LEB128, as WebAssembly writes sizes.
fn leb128(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let byte = u8::try_from(value & 0x7f).unwrap_or_default();
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_is_a_custom_section_that_split_takes_off_again() {
        let component = b"\0asm\x0d\0\x01\0\x01\x02\x03rest of it".to_vec();
        let version = "app.py 1234".repeat(20);
        let marked = mark(&component, &version);
        assert_eq!(&marked[..8], &component[..8], "still a component's header");
        assert_eq!(marked[8], 0, "a custom section");
        let (code, found) = split(&marked).expect("marked");
        assert_eq!(code, component);
        assert_eq!(found, version);
        assert!(split(&component).is_none(), "an unmarked component");
        let mut other = component[..8].to_vec();
        other.extend_from_slice(&[0, 5, 4, b'n', b'a', b'm', b'e']);
        assert!(split(&other).is_none(), "another custom section");
    }

    #[test]
    fn a_version_names_a_directory_under_the_copies_and_nothing_else() {
        let root = Path::new("/copies");
        assert_eq!(sources(root, "00ab12cd34ef5678"), Some(PathBuf::from("/copies/00ab12cd34ef5678")));
        for escape in ["", ".", "..", "../etc", "/etc", "a/b"] {
            assert_eq!(sources(root, escape), None, "{escape:?}");
        }
    }

    #[test]
    fn wasmtime_takes_a_marked_component_as_it_is() {
        let engine = wasmtime::Engine::default();
        // The smallest component: its header alone.
        let empty = b"\0asm\x0d\0\x01\0";
        wasmtime::component::Component::from_binary(&engine, empty).expect("a component");
        wasmtime::component::Component::from_binary(&engine, &mark(empty, "v1")).expect("still a component");
    }
}
