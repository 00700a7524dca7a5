fn main() -> std::process::ExitCode {
    limit_malloc_arenas();
    voiced::cli::main()
}

/// At most one glibc malloc arena per core (at least 2) instead of glibc's eight per core.
///
/// glibc gives a thread that meets contention its own arena and keeps the pages of what was freed
/// there, so every engine, runtime and blocking-pool thread that once held a large buffer (ONNX
/// Runtime's smaller arena regions and kernel buffers, CTranslate2's, audio) keeps up to 64 MiB
/// resident. Under the speech benchmark that was about 600 MiB in ten thread arenas; with two
/// arenas peak RSS fell by about 200 MiB at the same speed (docs/benchmarks.md, issue 37). An
/// operator's `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES` arena setting is left to win.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // mallopt has no safe binding; this is the crate's one unsafe call.
fn limit_malloc_arenas() {
    let set_by_operator = std::env::var_os("MALLOC_ARENA_MAX").is_some()
        || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("arena_max"));
    if set_by_operator {
        return;
    }
    let arenas = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let arenas = libc::c_int::try_from(arenas).unwrap_or(libc::c_int::MAX);
    // SAFETY: mallopt only sets an allocator parameter, before any other thread is started.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn limit_malloc_arenas() {}
