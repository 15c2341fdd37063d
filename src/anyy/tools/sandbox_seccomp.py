"""The seccomp filter the sandbox hands to bubblewrap (``--seccomp FD``, SPEC N7).

Built once per process with libseccomp (through ``pyseccomp``, a ctypes binding of the system's
``libseccomp.so.2``), exported as the raw BPF program bubblewrap loads just before it starts the command.
Everything is allowed except the system calls below, which fail with ``EPERM`` (``clone3`` with
``ENOSYS``, so that the C library falls back to ``clone``, whose flags the filter can see). They are the
kernel's largest doors for a process that should only run programs on files: mounting and the new mount
API, tracing other processes, the kernel keyrings, eBPF, namespaces (a new user namespace would give the
program capabilities again inside it), loading kernel code, performance counters, ``userfaultfd`` and
``io_uring`` (both used by kernel exploits), and the rest of what Docker's default profile refuses.
Capabilities are dropped as well, so most of these would fail anyway; the filter is the second lock, and
the only one where the kernel lets an unprivileged process in (user namespaces, ``userfaultfd``,
``perf_event_open``, ``bpf`` on some kernels, ``io_uring``).

A system call of another architecture (32-bit calls from a 64-bit process) kills the process: libseccomp's
default for a filter of the native architecture only.
"""

from __future__ import annotations

import errno
import functools
import os

# Refused with EPERM whatever their arguments.
REFUSED = (
    # mounts, old and new API, and changing the root
    "mount", "umount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr",
    # namespaces
    "unshare", "setns",
    # other processes' memory
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # kernel keyrings
    "keyctl", "add_key", "request_key",
    # kernel code, eBPF, performance counters, exploit helpers
    "bpf", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    # the machine as a whole
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "iopl", "ioperm", "open_by_handle_at",
    "lookup_dcookie",
)  # fmt: skip
CLONE_NEWUSER = 0x10000000


@functools.cache
def seccomp_program() -> tuple[bytes, str]:
    """The BPF program, and ``""``; or ``b""`` and why there is none on this machine."""
    try:
        import pyseccomp  # a ctypes binding: loading it loads the system's libseccomp
    except (ImportError, OSError, RuntimeError) as error:
        return b"", f"no seccomp filter (libseccomp is not usable: {error}; apt-get install libseccomp2)"
    try:
        rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        for name in REFUSED:
            try:
                rules.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
            except (ValueError, OSError):  # a call this architecture does not have (umount on x86-64)
                continue
        rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
        new_user = pyseccomp.Arg(0, pyseccomp.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)
        rules.add_rule(pyseccomp.ERRNO(errno.EPERM), "clone", new_user)
        with os.fdopen(os.memfd_create("anyy-seccomp"), "w+b") as program:
            rules.export_bpf(program)
            program.seek(0)
            return program.read(), ""
    except (OSError, RuntimeError, ValueError) as error:
        return b"", f"no seccomp filter (libseccomp could not build it: {error})"
