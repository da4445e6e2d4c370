//! `kubewasm componentize`: a core WebAssembly module built for WASI preview 1 (Go's
//! `GOOS=wasip1`, `-buildmode=c-shared`) made into a plugin component.
//!
//! The module exports the contract's functions under their canonical ABI names
//! (`kubewasm:reconciler/reconciler@0.1.0#reconcile`, ...) and a `cabi_realloc`; this
//! embeds the contract (`wit/`, compiled into the binary) and wraps the module's WASI
//! preview 1 imports with wasmtime's reactor adapter, the one of the wasmtime this host
//! runs, so that the result imports WASI preview 2 like every other plugin.
//!
//! The adapter needs memory of its own (its state and a 64 KiB stack) from the first
//! WASI call on, which Go's runtime makes while it starts, before any Go export may run.
//! Neither of wit-component's ways of getting it fits Go: the module's `cabi_realloc` is
//! Go code that traps before the runtime has started, and growing the memory under Go's
//! feet hands the same pages to Go's heap later (Go's `sbrk` assumes it alone grows the
//! memory). So the module reserves the adapter's memory itself: a zeroed array in its
//! data, found by the marker [`ARENA_MARKER`] followed by the array's address and
//! length (the Go SDK declares it), and this adds a `cabi_realloc_adapter` function that
//! hands the adapter pieces of that array.

use std::path::{Path, PathBuf};

use wasm_encoder::{Encode, Instruction, ValType};
use wasmparser::{DataKind, Operator, Parser, Payload, TypeRef};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::Resolve;

/// The contract, as compiled into this binary.
const CONTRACT_WIT: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../wit/reconciler.wit"));
/// The world a plugin implements.
const WORLD: &str = "plugin";
/// The 16 bytes that precede the adapter arena's address (u64, little-endian) and
/// length (u64) in the module's data.
pub const ARENA_MARKER: &[u8; 16] = b"kubewasm:arena:1";
/// The export wit-component hands the adapter as its allocator.
const ADAPTER_REALLOC: &str = "cabi_realloc_adapter";

/// Why no component was made. Nothing is written then.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: not a core WebAssembly module (a component already, or not WebAssembly)", path.display())]
    NotCoreModule { path: PathBuf },
    #[error(
        "{}: no memory reserved for the WASI adapter (the marker {:?} is not in its data): \
         build it with the kubewasm Go SDK (kubewasm.dev/sdk)",
        path.display(),
        String::from_utf8_lossy(ARENA_MARKER)
    )]
    NoArena { path: PathBuf },
    #[error("{}: malformed module: {reason}", path.display())]
    Malformed { path: PathBuf, reason: String },
    #[error("{}: cannot make a plugin component of it: {reason}", path.display())]
    Encode { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("the contract compiled into kubewasm does not parse: {0}")]
    Contract(String),
}

/// The component made of the core module in `core`: the adapter's memory carved out of
/// the module's reserved arena, the contract embedded, WASI preview 1 adapted to
/// preview 2. It is validated before it is returned.
///
/// # Errors
///
/// [`Error::NotCoreModule`] for anything but a core module; [`Error::NoArena`] for a
/// module that reserved no memory for the adapter; [`Error::Encode`] when the module
/// does not fit the contract (a missing or mistyped export, no `cabi_realloc`, an import
/// the contract and WASI do not offer), with wit-component's reason.
pub fn componentize(core: &Path) -> Result<Vec<u8>, Error> {
    let module = std::fs::read(core).map_err(|source| Error::Read { path: core.to_path_buf(), source })?;
    if !Parser::is_core_wasm(&module) {
        return Err(Error::NotCoreModule { path: core.to_path_buf() });
    }
    let malformed = |reason: String| Error::Malformed { path: core.to_path_buf(), reason };
    let layout = Layout::read(&module).map_err(|e| malformed(format!("{e:#}")))?;
    let arena = layout.arena.ok_or_else(|| Error::NoArena { path: core.to_path_buf() })?;
    let mut module = add_adapter_realloc(&module, &layout, arena).map_err(malformed)?;

    let encode = |e: anyhow::Error| Error::Encode { path: core.to_path_buf(), reason: format!("{e:#}") };
    let mut resolve = Resolve::default();
    let package = resolve.push_str("reconciler.wit", CONTRACT_WIT).map_err(|e| Error::Contract(format!("{e:#}")))?;
    let world = resolve.select_world(&[package], Some(WORLD)).map_err(|e| Error::Contract(format!("{e:#}")))?;
    wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8).map_err(encode)?;
    ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .map_err(encode)?
        .adapter(
            "wasi_snapshot_preview1",
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )
        .map_err(encode)?
        .encode()
        .map_err(encode)
}

/// [`componentize`] `core`, written to `out`; returns the component's size.
///
/// # Errors
///
/// Those of [`componentize`], and [`Error::Write`].
pub fn componentize_to(core: &Path, out: &Path) -> Result<usize, Error> {
    let component = componentize(core)?;
    std::fs::write(out, &component).map_err(|source| Error::Write { path: out.to_path_buf(), source })?;
    Ok(component.len())
}

/// The memory reserved for the adapter: `len` bytes from `addr`, zero at start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Arena {
    addr: u32,
    len: u32,
}

/// What [`add_adapter_realloc`] needs to know of a module.
#[derive(Debug, Default)]
struct Layout {
    imported_funcs: u32,
    defined_funcs: u32,
    types: u32,
    arena: Option<Arena>,
}

impl Layout {
    fn read(module: &[u8]) -> wasmparser::Result<Layout> {
        let mut layout = Layout::default();
        for payload in Parser::new(0).parse_all(module) {
            match payload? {
                Payload::TypeSection(types) => layout.types = types.count(),
                Payload::ImportSection(imports) => {
                    for import in imports.into_imports() {
                        if matches!(import?.ty, TypeRef::Func(_) | TypeRef::FuncExact(_)) {
                            layout.imported_funcs += 1;
                        }
                    }
                }
                Payload::FunctionSection(funcs) => layout.defined_funcs = funcs.count(),
                Payload::DataSection(data) => {
                    for segment in data {
                        let segment = segment?;
                        if let (None, DataKind::Active { offset_expr, .. }) = (layout.arena, &segment.kind) {
                            let mut ops = offset_expr.get_operators_reader();
                            if let Ok(Operator::I32Const { .. }) = ops.read() {
                                layout.arena = find_arena(segment.data);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(layout)
    }
}

/// The arena announced in a data segment, if it holds the marker.
fn find_arena(data: &[u8]) -> Option<Arena> {
    let at = data.windows(ARENA_MARKER.len()).position(|w| w == ARENA_MARKER)?;
    let fields = data.get(at + ARENA_MARKER.len()..at + ARENA_MARKER.len() + 16)?;
    let addr = u64::from_le_bytes(fields[..8].try_into().ok()?);
    let len = u64::from_le_bytes(fields[8..].try_into().ok()?);
    Some(Arena { addr: u32::try_from(addr).ok()?, len: u32::try_from(len).ok()? })
}

/// `module` with one more function, exported as [`ADAPTER_REALLOC`]: a bump allocator
/// over `arena` whose first 4 bytes hold how much of the rest is taken. It traps when
/// the arena is full or when asked to resize, which the adapter never does.
///
/// The function, its type and its export are appended to their sections, so no index of
/// the module changes; every other section is copied as it is.
fn add_adapter_realloc(module: &[u8], layout: &Layout, arena: Arena) -> Result<Vec<u8>, String> {
    const TYPE: u8 = 1;
    const FUNCTION: u8 = 3;
    const EXPORT: u8 = 7;
    const CODE: u8 = 10;
    if arena.len < 8 || arena.addr.checked_add(arena.len).is_none() {
        return Err(format!("the adapter arena at {:#x} of {} bytes is unusable", arena.addr, arena.len));
    }
    let func_index = layout.imported_funcs + layout.defined_funcs;
    let mut ty = vec![0x60];
    [ValType::I32; 4].as_slice().encode(&mut ty);
    [ValType::I32].as_slice().encode(&mut ty);
    let mut func = Vec::new();
    layout.types.encode(&mut func);
    let mut export = Vec::new();
    ADAPTER_REALLOC.encode(&mut export);
    export.push(0x00);
    func_index.encode(&mut export);
    let mut code = Vec::new();
    bump_allocator(arena).encode(&mut code);

    let mut out = module[..8].to_vec();
    let mut at = 8;
    let mut seen = [false; 4];
    while at < module.len() {
        let id = module[at];
        let (size, size_len) = read_u32(&module[at + 1..]).ok_or("a section's size does not parse")?;
        let start = at + 1 + size_len;
        let end = start + size as usize;
        let payload = module.get(start..end).ok_or("a section runs past the end of the module")?;
        let item = match id {
            TYPE => Some((0, &ty)),
            FUNCTION => Some((1, &func)),
            EXPORT => Some((2, &export)),
            CODE => Some((3, &code)),
            _ => None,
        };
        match item {
            Some((which, item)) => {
                seen[which] = true;
                let (count, count_len) = read_u32(payload).ok_or("a section's item count does not parse")?;
                let mut section = Vec::new();
                (count + 1).encode(&mut section);
                section.extend_from_slice(&payload[count_len..]);
                section.extend_from_slice(item);
                out.push(id);
                section.encode(&mut out);
            }
            None => out.extend_from_slice(&module[at..end]),
        }
        at = end;
    }
    if seen != [true; 4] {
        return Err("it has no type, function, export or code section".to_string());
    }
    Ok(out)
}

/// `cabi_realloc_adapter(old_ptr, old_len, align, new_len) -> ptr` over `arena`.
fn bump_allocator(arena: Arena) -> wasm_encoder::Function {
    use Instruction as I;
    let (used_at, first) = (arena.addr.cast_signed(), (arena.addr + 8).cast_signed());
    let end = (arena.addr + arena.len).cast_signed();
    // Locals: 0 old_ptr, 1 old_len, 2 align, 3 new_len, 4 ptr.
    let mut f = wasm_encoder::Function::new([(1, ValType::I32)]);
    for i in [
        // Only fresh allocations.
        I::LocalGet(0),
        I::If(wasm_encoder::BlockType::Empty),
        I::Unreachable,
        I::End,
        // ptr = (first + used + align - 1) & -align
        I::I32Const(used_at),
        I::I32Load(wasm_encoder::MemArg { offset: 0, align: 2, memory_index: 0 }),
        I::I32Const(first),
        I::I32Add,
        I::LocalGet(2),
        I::I32Add,
        I::I32Const(1),
        I::I32Sub,
        I::I32Const(0),
        I::LocalGet(2),
        I::I32Sub,
        I::I32And,
        I::LocalTee(4),
        // ptr + new_len past the end: the arena is too small.
        I::LocalGet(3),
        I::I32Add,
        I::I32Const(end),
        I::I32GtU,
        I::If(wasm_encoder::BlockType::Empty),
        I::Unreachable,
        I::End,
        // used = ptr + new_len - first
        I::I32Const(used_at),
        I::LocalGet(4),
        I::LocalGet(3),
        I::I32Add,
        I::I32Const(first),
        I::I32Sub,
        I::I32Store(wasm_encoder::MemArg { offset: 0, align: 2, memory_index: 0 }),
        I::LocalGet(4),
        I::End,
    ] {
        f.instruction(&i);
    }
    f
}

/// An unsigned LEB128 `u32` (possibly padded, as Go's linker writes section sizes) and
/// its length in bytes.
fn read_u32(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value: u64 = 0;
    for (i, byte) in bytes.iter().take(5).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((u32::try_from(value).ok()?, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_encoder::{
        CodeSection, ConstExpr, DataSection, ExportKind, ExportSection, FunctionSection, ImportSection, MemoryType,
        Module, TypeSection,
    };

    const ARENA: Arena = Arena { addr: 0x1000, len: 64 };

    /// A module like Go's in miniature: an imported and a defined function, a memory,
    /// and the arena's marker in its data.
    fn module(marker: &[u8]) -> Vec<u8> {
        let mut types = TypeSection::new();
        types.ty().function([], []);
        let mut imports = ImportSection::new();
        imports.import("wasi_snapshot_preview1", "sched_yield", wasm_encoder::EntityType::Function(0));
        imports.import(
            "env",
            "memory",
            MemoryType { minimum: 1, maximum: None, memory64: false, shared: false, page_size_log2: None },
        );
        let mut funcs = FunctionSection::new();
        funcs.function(0);
        let mut exports = ExportSection::new();
        exports.export("run", ExportKind::Func, 1);
        let mut code = CodeSection::new();
        let mut run = wasm_encoder::Function::new([]);
        run.instruction(&Instruction::End);
        code.function(&run);
        let mut announce = b"padding".to_vec();
        announce.extend_from_slice(marker);
        announce.extend_from_slice(&u64::from(ARENA.addr).to_le_bytes());
        announce.extend_from_slice(&u64::from(ARENA.len).to_le_bytes());
        let mut data = DataSection::new();
        data.active(0, &ConstExpr::i32_const(0x2000), announce);
        let mut module = Module::new();
        module.section(&types).section(&imports).section(&funcs).section(&exports).section(&code).section(&data);
        module.finish()
    }

    #[test]
    fn the_arena_is_found_by_its_marker() {
        let layout = Layout::read(&module(ARENA_MARKER)).unwrap();
        assert_eq!(layout.arena, Some(ARENA));
        assert_eq!((layout.imported_funcs, layout.defined_funcs, layout.types), (1, 1, 1));
        assert_eq!(Layout::read(&module(b"kubewasm:arena:0")).unwrap().arena, None);
    }

    #[test]
    fn the_adapter_realloc_hands_out_aligned_pieces_of_the_arena_and_traps_when_it_is_full() {
        let original = module(ARENA_MARKER);
        let layout = Layout::read(&original).unwrap();
        let patched = add_adapter_realloc(&original, &layout, ARENA).unwrap();
        wasmparser::Validator::new().validate_all(&patched).unwrap();

        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, &patched).unwrap();
        let mut store = wasmtime::Store::new(&engine, ());
        let memory = wasmtime::Memory::new(&mut store, wasmtime::MemoryType::new(1, None)).unwrap();
        let yield_ = wasmtime::Func::wrap(&mut store, || {});
        let instance = wasmtime::Instance::new(&mut store, &module, &[yield_.into(), memory.into()]).unwrap();
        // The module's own export kept its index.
        instance.get_typed_func::<(), ()>(&mut store, "run").unwrap().call(&mut store, ()).unwrap();
        let realloc = instance.get_typed_func::<(i32, i32, i32, i32), i32>(&mut store, ADAPTER_REALLOC).unwrap();
        let first = realloc.call(&mut store, (0, 0, 1, 3)).unwrap();
        assert_eq!(first, 0x1008);
        let second = realloc.call(&mut store, (0, 0, 8, 16)).unwrap();
        assert_eq!(second, 0x1010, "aligned to 8");
        let third = realloc.call(&mut store, (0, 0, 4, 32)).unwrap();
        assert_eq!(third, 0x1020);
        // 0x1040 is the arena's end: nothing is left.
        assert!(realloc.call(&mut store, (0, 0, 1, 1)).is_err());
        assert!(realloc.call(&mut store, (0x1008, 3, 1, 6)).is_err(), "no resizing");
    }

    #[test]
    fn a_module_without_the_marker_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("kubewasm-componentize-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("core.wasm");
        std::fs::write(&file, module(b"something-else!!")).unwrap();
        let err = componentize(&file).unwrap_err().to_string();
        assert!(err.contains("core.wasm: no memory reserved for the WASI adapter"), "{err}");
        std::fs::write(&file, b"not wasm").unwrap();
        let err = componentize(&file).unwrap_err().to_string();
        assert!(err.contains("core.wasm: not a core WebAssembly module"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
