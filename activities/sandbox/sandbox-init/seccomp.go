package main

// What a sandboxed command may not do to its sandbox's pid 1: set its resource limits. The
// kernel lets a process of the same uid set another's with prlimit, dumpable or not, and a CPU
// limit of a second would have the kernel kill a command sandbox's server (reap.go), a limit of
// three descriptors leave it unable to start anything. A seccomp filter, set before the command
// is exec'd and kept by everything it starts, refuses prlimit on pid 1 with EPERM; every other
// system call, prlimit on any other process among them, is untouched.

import (
	"syscall"
	"unsafe"
)

// Offsets into struct seccomp_data, and the constants of linux/filter.h and linux/seccomp.h.
const (
	seccompDataNr   = 0
	seccompDataArch = 4
	seccompDataArg0 = 16 // its low half on the little-endian architectures below

	bpfLdW  = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfRetK = 0x06 // BPF_RET | BPF_K

	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000

	prSetNoNewPrivs   = 38
	prSetSeccomp      = 22
	seccompModeFilter = 2
	auditArchX86_64   = 0xc000003e
	auditArchI386     = 0x40000003
	auditArchAarch64  = 0xc00000b7
	x32SyscallBit     = 0x40000000
	prlimit64X86_64   = 302
	prlimit64I386     = 340
	prlimit64Aarch64  = 261
)

type sockFilter struct {
	code uint16
	jt   uint8
	jf   uint8
	k    uint32
}

type sockFprog struct {
	len    uint16
	filter *sockFilter
}

// prlimitOnInitFilter is the program: for each architecture a process can make system calls
// with on this machine, its numbers for prlimit64.
func prlimitOnInitFilter() []sockFilter {
	stmt := func(code uint16, k uint32) sockFilter { return sockFilter{code: code, k: k} }
	jump := func(k uint32, jt, jf uint8) sockFilter { return sockFilter{code: bpfJeqK, k: k, jt: jt, jf: jf} }
	deny := stmt(bpfRetK, seccompRetErrno|uint32(syscall.EPERM))
	allow := stmt(bpfRetK, seccompRetAllow)
	return []sockFilter{
		/* 0 */ stmt(bpfLdW, seccompDataArch),
		/* 1 */ jump(auditArchX86_64, 0, 3),
		/* 2 */ stmt(bpfLdW, seccompDataNr),
		/* 3 */ jump(prlimit64X86_64, 7, 0),
		/* 4 */ jump(x32SyscallBit|prlimit64X86_64, 6, 9),
		/* 5 */ jump(auditArchI386, 0, 2),
		/* 6 */ stmt(bpfLdW, seccompDataNr),
		/* 7 */ jump(prlimit64I386, 3, 6),
		/* 8 */ jump(auditArchAarch64, 0, 5),
		/* 9 */ stmt(bpfLdW, seccompDataNr),
		/* 10 */ jump(prlimit64Aarch64, 0, 3),
		// The pid: the kernel reads an int, so only the low half counts.
		/* 11 */ stmt(bpfLdW, seccompDataArg0),
		/* 12 */ jump(1, 0, 1),
		/* 13 */ deny,
		/* 14 */ allow,
	}
}

// refusePrlimitOnInit installs the filter in this process (and so in what it execs). A kernel
// without seccomp filters leaves it out: the server is then as exposed as before, never the host.
func refusePrlimitOnInit() {
	program := prlimitOnInitFilter()
	prog := sockFprog{len: uint16(len(program)), filter: &program[0]}
	// A filter needs no_new_privs without CAP_SYS_ADMIN (bubblewrap has set it already).
	syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0)
	syscall.RawSyscall6(syscall.SYS_PRCTL, prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&prog)), 0, 0, 0)
}
