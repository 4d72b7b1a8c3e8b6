//! Ctrl-C for long training runs: the first sets a flag the loop checks after each step (it then saves
//! a checkpoint and exits), a second kills the process at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;

/// Installs the SIGINT handler and returns the flag it sets.
pub fn ctrl_c_flag() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    // SAFETY: the handler only touches an atomic and calls `_exit`, both async-signal-safe.
    unsafe {
        signal_hook_registry::register(libc::SIGINT, move || {
            if f.swap(true, Ordering::SeqCst) {
                libc::_exit(130);
            }
        })?;
    }
    Ok(flag)
}
