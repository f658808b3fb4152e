//! Landlock through raw syscalls: the ruleset is built in the parent (it needs allocation and
//! path lookups) and only `landlock_restrict_self` runs in the child before exec.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

// The syscall numbers are the same on every architecture (generic table).
const SYS_CREATE_RULESET: libc::c_long = 444;
const SYS_ADD_RULE: libc::c_long = 445;
pub(crate) const SYS_RESTRICT_SELF: libc::c_long = 446;

const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;

const FS_WRITE_FILE: u64 = 1 << 1;
const FS_REMOVE_DIR: u64 = 1 << 4;
const FS_REMOVE_FILE: u64 = 1 << 5;
const FS_MAKE_CHAR: u64 = 1 << 6;
const FS_MAKE_DIR: u64 = 1 << 7;
const FS_MAKE_REG: u64 = 1 << 8;
const FS_MAKE_SOCK: u64 = 1 << 9;
const FS_MAKE_FIFO: u64 = 1 << 10;
const FS_MAKE_BLOCK: u64 = 1 << 11;
const FS_MAKE_SYM: u64 = 1 << 12;
const FS_REFER: u64 = 1 << 13; // ABI 2
const FS_TRUNCATE: u64 = 1 << 14; // ABI 3

const NET_BIND_TCP: u64 = 1 << 0; // ABI 4
const NET_CONNECT_TCP: u64 = 1 << 1;

const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0; // ABI 6
const SCOPE_SIGNAL: u64 = 1 << 1;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version the kernel offers, or None where Landlock is off or absent.
pub(crate) fn abi_version() -> Option<u32> {
    // SAFETY: with a null attr and size 0 this call only reports the version.
    let r = unsafe {
        libc::syscall(
            SYS_CREATE_RULESET,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    (r > 0).then_some(r as u32)
}

/// What a ruleset of this ABI restricts (for `Protections`).
pub(crate) struct Coverage {
    pub net: bool,
    pub scopes: bool,
}

pub(crate) fn coverage(abi: u32) -> Coverage {
    Coverage {
        net: abi >= 4,
        scopes: abi >= 6,
    }
}

fn handled_fs(abi: u32) -> u64 {
    // Only writes are handled: reading stays allowed everywhere (the interpreter needs its
    // standard library), and so does executing.
    let mut fs = FS_WRITE_FILE
        | FS_REMOVE_DIR
        | FS_REMOVE_FILE
        | FS_MAKE_CHAR
        | FS_MAKE_DIR
        | FS_MAKE_REG
        | FS_MAKE_SOCK
        | FS_MAKE_FIFO
        | FS_MAKE_BLOCK
        | FS_MAKE_SYM;
    if abi >= 2 {
        fs |= FS_REFER;
    }
    if abi >= 3 {
        fs |= FS_TRUNCATE;
    }
    fs
}

/// A ruleset that allows writes only beneath `writable` (and to /dev/null), denies TCP bind and
/// connect (ABI 4+) and scopes signals and abstract unix sockets to the sandbox (ABI 6+).
pub(crate) fn ruleset(abi: u32, writable: &Path) -> io::Result<OwnedFd> {
    let fs = handled_fs(abi);
    let attr = RulesetAttr {
        handled_access_fs: fs,
        handled_access_net: if abi >= 4 {
            NET_BIND_TCP | NET_CONNECT_TCP
        } else {
            0
        },
        scoped: if abi >= 6 {
            SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        } else {
            0
        },
    };
    // Older kernels refuse fields they do not know, so pass only the ones this ABI has.
    let size = match abi {
        1..=3 => 8,
        4 | 5 => 16,
        _ => std::mem::size_of::<RulesetAttr>(),
    };
    // SAFETY: attr is a valid RulesetAttr and size never exceeds it.
    let fd = unsafe {
        libc::syscall(
            SYS_CREATE_RULESET,
            std::ptr::from_ref::<RulesetAttr>(&attr),
            size,
            0u32,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd to us.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    add_path_rule(&ruleset, writable, fs)?;
    let file_rights = FS_WRITE_FILE | if abi >= 3 { FS_TRUNCATE } else { 0 };
    add_path_rule(&ruleset, Path::new("/dev/null"), file_rights)?;
    Ok(ruleset)
}

fn add_path_rule(ruleset: &OwnedFd, path: &Path, access: u64) -> io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: c_path is a valid C string.
    let raw = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: open just returned this fd.
    let dir = unsafe { OwnedFd::from_raw_fd(raw) };
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: dir.as_raw_fd(),
    };
    // SAFETY: attr is a valid, packed PathBeneathAttr as the syscall expects.
    let r = unsafe {
        libc::syscall(
            SYS_ADD_RULE,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            std::ptr::from_ref::<PathBeneathAttr>(&attr),
            0u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
