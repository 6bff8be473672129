//! How the tools write to stdout and stderr: a reader that closes the pipe
//! (`searchgate admin audit | head -3`) ends the output, as it ends `cat`'s. Rust ignores
//! SIGPIPE, so a write to a closed pipe fails with `BrokenPipe` and `print!` panics
//! ("failed printing to stdout", exit 101); here that error makes the process die of
//! SIGPIPE, quietly, with the status every Unix tool has then (128 + 13 = 141 in a shell).
//! SIGPIPE stays ignored everywhere else, so a server that resets one of the tools'
//! sockets is still an error the tool reports, never a silent death.
//!
//! Every tool prints through [`out`] / [`outln!`] (stdout) and [`err`] / [`errln!`]
//! (stderr, whose errors are ignored: there is nowhere left to report them).
//!
//! Must not touch: sockets, files.

use std::io::Write as _;

/// Writes `text` to stdout and flushes it. A closed pipe ends the process by SIGPIPE;
/// another write error (a full disk behind a redirection) is reported on stderr and the
/// process exits with status 1.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => closed_pipe(),
        Err(e) => {
            err(&format!("searchgate: writing to stdout: {e}\n"));
            std::process::exit(1);
        }
    }
}

/// Writes `text` to stderr; errors are ignored.
pub fn err(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The reader of stdout went away: end as a Unix tool does, killed by SIGPIPE.
pub fn closed_pipe() -> ! {
    // SAFETY: `signal` with `SIG_DFL` and `raise` are plain system calls with valid
    // arguments; nothing here reads or writes Rust memory. The process is ending: no other
    // thread depends on SIGPIPE staying ignored from here on.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Not reached: the default action of SIGPIPE terminates the process. Should a
    // sandbox block the signal, still end quietly with the shell's status for it.
    std::process::exit(128 + libc::SIGPIPE)
}

/// `println!` for the tools' stdout: a closed pipe ends the process quietly.
macro_rules! outln {
    () => {
        $crate::tools::out::out("\n")
    };
    ($($arg:tt)*) => {
        $crate::tools::out::out(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` for the tools' stderr, errors ignored.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::tools::out::err(&format!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use errln;
pub(crate) use outln;
