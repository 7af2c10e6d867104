package main

// What a sandboxed command may not do to another process: set its resource limits. The kernel
// lets a process of the same uid set another's with prlimit, dumpable or not, and by the id of
// any of its threads; a CPU limit of a second would have the kernel kill a command sandbox's
// server, its pid 1 (reap.go), a limit of three descriptors leave it unable to start anything. A
// seccomp filter, set before the command is exec'd and kept by everything it starts, refuses with
// EPERM a prlimit that sets limits of any process but the caller's own (pid 0, as setrlimit,
// `ulimit` and `prlimit cmd` do). Reading another's limits, and every other system call, is
// untouched.

import (
	"runtime"
	"syscall"
	"unsafe"
)

// Offsets into struct seccomp_data (arguments are 64-bit, little-endian on the architectures
// below), and the constants of linux/filter.h, linux/seccomp.h and linux/audit.h.
const (
	seccompDataNr   = 0
	seccompDataArch = 4
	seccompDataArg0 = 16
	seccompDataArg2 = 32

	bpfLdW  = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfRetK = 0x06 // BPF_RET | BPF_K

	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000

	prSetNoNewPrivs   = 38
	prSetSeccomp      = 22
	seccompModeFilter = 2
)

// prlimit64's number under each architecture a process may make system calls with on the
// machines the worker runs on (x32 is x86_64's with a bit set; arm on arm64 hosts with 32-bit
// support).
var prlimitNumbers = []struct{ arch, nr uint32 }{
	{0xc000003e, 302},              // x86_64
	{0xc000003e, 0x40000000 | 302}, // x32
	{0x40000003, 340},              // i386
	{0xc00000b7, 261},              // aarch64
	{0x40000028, 369},              // arm
}

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

// op is an instruction of the program as written: a jump names its targets by label ("" is the
// next instruction), resolved by assemble.
type op struct {
	label  string
	code   uint16
	k      uint32
	jt, jf string
}

func assemble(ops []op) []sockFilter {
	at := map[string]int{}
	for i, o := range ops {
		if o.label != "" {
			at[o.label] = i
		}
	}
	offset := func(from int, to string) uint8 {
		if to == "" {
			return 0
		}
		return uint8(at[to] - from - 1)
	}
	program := make([]sockFilter, len(ops))
	for i, o := range ops {
		program[i] = sockFilter{code: o.code, k: o.k, jt: offset(i, o.jt), jf: offset(i, o.jf)}
	}
	return program
}

// prlimitFilter is the program: prlimit64 of another process with new limits is refused.
func prlimitFilter() []sockFilter {
	var ops []op
	for i, p := range prlimitNumbers {
		next := "allow"
		if i+1 < len(prlimitNumbers) {
			next = "arch" + string(rune('0'+i+1))
		}
		ops = append(ops,
			op{label: "arch" + string(rune('0'+i)), code: bpfLdW, k: seccompDataArch},
			op{code: bpfJeqK, k: p.arch, jf: next},
			op{code: bpfLdW, k: seccompDataNr},
			op{code: bpfJeqK, k: p.nr, jt: "prlimit", jf: next},
		)
	}
	return assemble(append(ops,
		// The pid: the kernel reads an int, so only the low half counts. 0 is the caller.
		op{label: "prlimit", code: bpfLdW, k: seccompDataArg0},
		op{code: bpfJeqK, k: 0, jt: "allow"},
		// The new limits: a NULL pointer only reads.
		op{code: bpfLdW, k: seccompDataArg2},
		op{code: bpfJeqK, k: 0, jf: "deny"},
		op{code: bpfLdW, k: seccompDataArg2 + 4},
		op{code: bpfJeqK, k: 0, jt: "allow"},
		op{label: "deny", code: bpfRetK, k: seccompRetErrno | uint32(syscall.EPERM)},
		op{label: "allow", code: bpfRetK, k: seccompRetAllow},
	))
}

// refuseOthersLimits installs the filter on this thread, which must be the one that execs the
// command (the filter is per thread until then): the caller stays locked to it. A kernel without
// seccomp filters (EINVAL) leaves it out.
func refuseOthersLimits() {
	runtime.LockOSThread()
	program := prlimitFilter()
	prog := sockFprog{len: uint16(len(program)), filter: &program[0]}
	// A filter needs no_new_privs without CAP_SYS_ADMIN (bubblewrap has set it already).
	syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0)
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&prog)), 0, 0, 0)
	if errno != 0 && errno != syscall.EINVAL {
		fail(125, "seccomp filter: %v", errno)
	}
}
