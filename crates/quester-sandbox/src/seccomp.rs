//! A small seccomp filter (classic BPF, written by hand) for what the namespaces and Landlock
//! leave open: sockets of families other than IPv4/IPv6 (a Unix socket with a path reaches any
//! host socket file the program may write to, whatever the network namespace; vsock reaches
//! the hypervisor), io_uring (its socket and file operations do not pass through the syscalls
//! this filter sees), the ptrace family (reading or writing another process's memory or
//! file descriptors) and the kernel keyrings. Refused calls fail with EPERM, so the program
//! sees an ordinary error. The filter is built in the parent; the child only installs it, just
//! before exec.

// struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args (6 x u64).
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
/// The low 32 bits of args[0] (little-endian): the socket family, an int to the kernel.
const OFFSET_ARG0_LOW: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E; // EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7; // EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE

/// x32 system calls run with the x86_64 arch value and this bit in the number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const RET_ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const RET_EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
const RET_KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

fn load(offset: u32) -> libc::sock_filter {
    stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, offset)
}

fn ret(action: u32) -> libc::sock_filter {
    stmt(libc::BPF_RET | libc::BPF_K, action)
}

fn jeq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    jump(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, k, jt, jf)
}

/// The program, built once per process; None on an architecture it has no numbers for.
#[derive(Clone, Copy)]
pub(crate) struct Filter(&'static [libc::sock_filter]);

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Filter({} instructions)", self.0.len())
    }
}

pub(crate) fn program() -> Option<Filter> {
    static PROGRAM: std::sync::OnceLock<Option<Vec<libc::sock_filter>>> =
        std::sync::OnceLock::new();
    PROGRAM.get_or_init(filter).as_deref().map(Filter)
}

/// Jumps are relative (`pc + 1 + offset`), so each check is followed by its own return.
#[cfg(all(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    target_endian = "little"
))]
fn filter() -> Option<Vec<libc::sock_filter>> {
    // Whole syscalls refused. io_uring: IORING_OP_SOCKET / CONNECT / OPENAT run inside the
    // kernel without a syscall this filter could check. ptrace, process_vm_* and pidfd_getfd:
    // nothing in Python needs them, and they are how a process reads or takes over another
    // one (Landlock and the per-run uid refuse that for host processes where they are on;
    // this holds where they are off). The keyrings: per uid, in no namespace used here, so as
    // root without the per-run uid the program would share root's user keyring.
    let denied = [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_getfd,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_keyctl,
    ];
    let mut f = vec![
        load(OFFSET_ARCH),
        // Another ABI (e.g. i386 through int 0x80) has other numbers: nothing here would apply.
        jeq(AUDIT_ARCH, 1, 0),
        ret(RET_KILL),
        load(OFFSET_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    f.extend([
        jump(
            libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
            X32_SYSCALL_BIT,
            0,
            1,
        ),
        ret(RET_KILL),
    ]);
    for nr in denied {
        f.extend([jeq(nr as u32, 0, 1), ret(RET_EPERM)]);
    }
    // socket(2) and socketpair(2): only AF_INET and AF_INET6, which the network namespace
    // (and Landlock's TCP rules) contain. Everything else, AF_UNIX, AF_VSOCK, AF_NETLINK,
    // AF_PACKET among them, fails with EPERM.
    f.extend([
        jeq(libc::SYS_socket as u32, 1, 0),
        jeq(libc::SYS_socketpair as u32, 0, 4),
        load(OFFSET_ARG0_LOW),
        jeq(libc::AF_INET as u32, 2, 0),
        jeq(libc::AF_INET6 as u32, 1, 0),
        ret(RET_EPERM),
        ret(RET_ALLOW),
    ]);
    Some(f)
}

#[cfg(not(all(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    target_endian = "little"
)))]
fn filter() -> Option<Vec<libc::sock_filter>> {
    None
}

/// In the child, after PR_SET_NO_NEW_PRIVS: async-signal-safe, no allocation.
pub(crate) fn install(filter: Filter) -> std::io::Result<()> {
    let filter = filter.0;
    let prog = libc::sock_fprog {
        len: filter.len() as libc::c_ushort,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: prog points to `filter`, alive for the call; the kernel copies the program.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            std::ptr::from_ref(&prog),
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every jump lands inside the program and the program ends in a return.
    #[test]
    fn jumps_stay_inside_the_program() {
        let Some(f) = filter() else {
            return;
        };
        assert!(f.len() < 4096);
        for (pc, insn) in f.iter().enumerate() {
            let class = u32::from(insn.code) & 0x07;
            if class == libc::BPF_JMP {
                for off in [insn.jt, insn.jf] {
                    assert!(pc + 1 + usize::from(off) < f.len(), "jump at {pc}");
                }
            }
        }
        let last = f.last().unwrap();
        assert_eq!(u32::from(last.code), libc::BPF_RET | libc::BPF_K);
    }

    /// Runs the program on one call, as the kernel would (only the instructions it uses).
    fn verdict(f: &[libc::sock_filter], arch: u32, nr: u32, arg0: u64) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        data[16..24].copy_from_slice(&arg0.to_le_bytes());
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let insn = f[pc];
            let code = u32::from(insn.code);
            if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS {
                let at = insn.k as usize;
                acc = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                pc += 1;
            } else if code == libc::BPF_RET | libc::BPF_K {
                return insn.k;
            } else {
                let taken = match code {
                    c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => acc == insn.k,
                    c if c == libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K => acc >= insn.k,
                    other => panic!("unexpected instruction {other:#x}"),
                };
                pc += 1 + usize::from(if taken { insn.jt } else { insn.jf });
            }
        }
    }

    #[test]
    fn the_program_refuses_what_it_should_and_nothing_else() {
        let Some(f) = filter() else {
            return;
        };
        let nr = |n: libc::c_long| n as u32;
        let unix = libc::AF_UNIX as u64;
        let call = |n, arg0| verdict(&f, AUDIT_ARCH, n, arg0);
        assert_eq!(call(nr(libc::SYS_socket), unix), RET_EPERM);
        assert_eq!(call(nr(libc::SYS_socketpair), unix), RET_EPERM);
        // The kernel reads the family as an int: high bits do not hide AF_UNIX.
        assert_eq!(call(nr(libc::SYS_socket), unix | 1 << 32), RET_EPERM);
        assert_eq!(call(nr(libc::SYS_socket), libc::AF_VSOCK as u64), RET_EPERM);
        assert_eq!(call(nr(libc::SYS_socket), libc::AF_INET as u64), RET_ALLOW);
        assert_eq!(call(nr(libc::SYS_socket), libc::AF_INET6 as u64), RET_ALLOW);
        assert_eq!(call(nr(libc::SYS_io_uring_setup), 8), RET_EPERM);
        assert_eq!(call(nr(libc::SYS_ptrace), 16), RET_EPERM);
        assert_eq!(call(nr(libc::SYS_keyctl), 0), RET_EPERM);
        for ok in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_execve,
            libc::SYS_clone,
        ] {
            assert_eq!(call(nr(ok), unix), RET_ALLOW, "syscall {ok}");
        }
        // Another ABI is killed: its numbers mean other calls.
        assert_eq!(verdict(&f, 0x4000_0003, 359, unix), RET_KILL);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(call(X32_SYSCALL_BIT | 41, unix), RET_KILL);
    }
}
