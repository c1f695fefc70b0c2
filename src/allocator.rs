//! The binary's allocator: jemalloc (see Cargo.toml for why), tuned for
//! what reel's processes are: short-lived and heap-bound. Shared by the
//! benches (`#[path]`), so they measure what the binary does. The library
//! sets no allocator.
//!
//! `narenas:1`: one arena, so pages are not spread over one arena per core
//! (with the default, a 50,000-event replay's peak RSS grew 16 MB instead
//! of 8 MB); the per-thread caches keep the pool's threads from contending.
//!
//! No `thp:always` (38f4bca had it): transparent huge pages made that
//! replay ~10% faster but raised its peak RSS by 10.6 MB (1.42x → 1.20x the
//! file without them; the memory target is 1.3x), and zeroing a 2 MiB page
//! for each of the first arenas' chunks was paid by every small run too
//! (issue 44, docs/benchmarks.md).
//!
//! `_RJEM_MALLOC_CONF` in the environment still overrides it (`thp:always` to
//! trade the memory back for speed).

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc reads its built-in options from this symbol (`malloc_conf`, under
/// tikv-jemalloc-sys's `_rjem_` prefix): a C string pointer.
#[cfg(not(target_env = "msvc"))]
#[repr(transparent)]
struct MallocConf(*const std::ffi::c_char);

// SAFETY: the pointer is to a static, immutable C string.
#[cfg(not(target_env = "msvc"))]
unsafe impl Sync for MallocConf {}

#[cfg(not(target_env = "msvc"))]
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: MallocConf = MallocConf(c"narenas:1".as_ptr());
