//! The binary's allocator: jemalloc (see Cargo.toml for why), tuned for
//! what reel's processes are: short-lived and heap-bound. Shared by the
//! benches (`#[path]`), so they measure what the binary does. The library
//! sets no allocator.
//!
//! `thp:always`: jemalloc asks for transparent huge pages on its arenas
//! (`madvise`, so it takes effect where the system's THP mode is
//! `madvise` or `always`). A 50,000-event replay grows its heap by tens of
//! megabytes, and faulting that in 4 KiB at a time was ~10% of its CPU;
//! 2 MiB pages make it ~10% faster (docs/benchmarks.md).
//!
//! `narenas:1`: one arena, so huge pages are not spread over one arena per
//! core (with the default, the same replay's peak RSS grew 16 MB instead
//! of 8 MB); the per-thread caches keep the pool's threads from contending.
//!
//! `_RJEM_MALLOC_CONF` in the environment still overrides both.

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
static MALLOC_CONF: MallocConf = MallocConf(c"thp:always,narenas:1".as_ptr());
