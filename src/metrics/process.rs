//! Process figures for the exposition, read from `/proc` and `getrlimit` at scrape time:
//! open file descriptors and their limit (the open-file budget that a large shard count
//! can exhaust, spec 8.1.5), resident memory.
//!
//! Must not touch: anything but reading these figures.

/// What the process uses now; `None` where the platform does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessFigures {
    pub open_fds: Option<u64>,
    pub max_fds: Option<u64>,
    pub resident_bytes: Option<u64>,
}

impl ProcessFigures {
    /// Reads the figures of this process.
    pub fn read() -> ProcessFigures {
        ProcessFigures {
            open_fds: std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|d| d.count() as u64),
            max_fds: max_fds(),
            resident_bytes: resident_bytes(),
        }
    }
}

fn max_fds() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass and reads nothing else.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    (rc == 0 && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_files_open_within_its_limit_and_memory() {
        let f = ProcessFigures::read();
        let open = f.open_fds.expect("/proc/self/fd is readable on Linux");
        assert!(open >= 3, "stdin, stdout, stderr at least: {open}");
        if let Some(max) = f.max_fds {
            assert!(open <= max);
        }
        let held = vec![1u8; 8 << 20];
        let rss = ProcessFigures::read().resident_bytes.expect("statm");
        assert!(rss >= held.len() as u64, "{rss}");
    }
}
