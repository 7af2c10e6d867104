package main

// Waiting for a child without a thread of its own: os/exec's Wait blocks an OS thread per child
// in waitid, and a spawn server in a run's cgroup counts its threads against the run's process
// limit (a run one process short of it could leave the server none, and the Go runtime ends a
// process that cannot make a thread it needs). Instead each child's pidfd waits in the netpoller
// (it becomes readable when the child exits), and the child is reaped without blocking.

import (
	"os"
	"syscall"
	"unsafe"
)

const (
	pPidfd  = 3 // waitid's P_PIDFD (Linux 5.4)
	wNohang = 0x1
	wNowait = 0x1000000
	cldExit = 1 // siginfo's si_code for a child that exited; otherwise si_status is the signal
)

// waitid on a pidfd, not blocking: the child's pid and status, pid 0 while it runs.
func waitidPidfd(pidfd uintptr, options int) (pid int32, code int32, status int32, errno syscall.Errno) {
	var info [128]byte
	_, _, errno = syscall.Syscall6(syscall.SYS_WAITID, pPidfd, pidfd, uintptr(unsafe.Pointer(&info[0])),
		uintptr(syscall.WEXITED|wNohang|options), 0, 0)
	// siginfo_t for SIGCHLD: si_code at 8, si_pid at 16, si_status at 24 (64-bit Linux).
	code = *(*int32)(unsafe.Pointer(&info[8]))
	pid = *(*int32)(unsafe.Pointer(&info[16]))
	status = *(*int32)(unsafe.Pointer(&info[24]))
	return
}

// awaitExit waits until the child of pidfd has exited, calls exited while it is still a zombie
// (its pid and group cannot be taken by another process yet), then reaps it. It returns the
// exit code, or -1 and the signal that ended it; ok is false when the pidfd cannot be waited on
// so (the caller then waits as os/exec does).
func awaitExit(pidfd int, exited func()) (code, signal int, ok bool) {
	if err := syscall.SetNonblock(pidfd, true); err != nil {
		syscall.Close(pidfd)
		return 0, 0, false
	}
	file := os.NewFile(uintptr(pidfd), "pidfd")
	defer file.Close()
	conn, err := file.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	failed := false
	err = conn.Read(func(fd uintptr) bool {
		pid, _, _, errno := waitidPidfd(fd, wNowait)
		if errno == syscall.EINTR {
			return false
		}
		if errno != 0 {
			failed = true
			return true
		}
		// Not yet: wait until the pidfd is readable.
		return pid != 0
	})
	if err != nil || failed {
		return 0, 0, false
	}
	exited()
	var siCode, status int32
	err = conn.Read(func(fd uintptr) bool {
		var errno syscall.Errno
		_, siCode, status, errno = waitidPidfd(fd, 0)
		return errno != syscall.EINTR
	})
	if err != nil {
		return 0, 0, false
	}
	if siCode == cldExit {
		return int(status), 0, true
	}
	return -1, int(status), true
}
