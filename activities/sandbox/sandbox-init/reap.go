package main

// A contained server is its sandbox's pid 1 (bwrap --as-pid-1), and so out of reach of what runs
// there: the kernel gives a pid namespace's init only the signals it handles or ignores from
// inside, never SIGKILL or SIGSTOP, and `kill -1` passes it by. A command's `kill -9 -1` leaves
// the server that relays its output, and the network bridges, alone. (What could still end it
// from inside, a resource limit set on it with prlimit, is refused to every command: see
// seccomp.go. What is left is slowing it: renice, SCHED_IDLE, affinity.) As pid 1 it is also the parent of every process whose own parent has gone, and
// reaps them: zombies would count against the run's process limit while the sandbox stays up.

import (
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// The signals the Go runtime takes for faults of its own unless the kernel says a process sent
// them with kill or tgkill: sent with sigqueue, or as a file's SIGIO (F_SETSIG), they would crash
// the server however it asks to be notified. The kernel ignores them for it instead. (A real
// fault of the server still ends it, the kernel delivers those whatever the disposition, but
// without Go's traceback: the worker sees the channel end.)
var faultSignals = []syscall.Signal{
	syscall.SIGILL, syscall.SIGTRAP, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSTKFLT, syscall.SIGSYS,
}

// minReapInterval paces the reaps: a flood of SIGCHLD from the sandbox must not keep the server
// scanning /proc (with its lock held) instead of serving.
const minReapInterval = 10 * time.Millisecond

// becomeInit handles every signal, so that none from the sandbox ends the server (the Go
// runtime's default for SIGTERM or SIGHUP is to exit), and reaps orphans on each SIGCHLD.
func (s *server) becomeInit() {
	spareThreads(spareThreadCount)
	s.reapNow = make(chan struct{}, 1)
	swallowed := make(chan os.Signal, 16)
	signal.Notify(swallowed)
	go func() {
		for range swallowed {
		}
	}()
	for _, sig := range faultSignals {
		ignoreInKernel(sig)
	}
	// A channel of its own: a flood of other signals never crowds a SIGCHLD out.
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	go func() {
		for range children {
			s.pokeReaper()
		}
	}()
	go func() {
		for range s.reapNow {
			if !s.reapOrphans() {
				// /proc could not be read (no descriptor free, say): look again soon.
				time.AfterFunc(100*time.Millisecond, s.pokeReaper)
			}
			time.Sleep(minReapInterval)
		}
	}()
}

// spareThreadCount is how many idle threads a contained server makes at its start.
const spareThreadCount = 4

// spareThreads makes n OS threads that the Go runtime then keeps idle. A contained server's
// threads count against the run's process limit, and the runtime ends a process that cannot
// make a thread it needs: a fork bomb in the sandbox, which fills the limit, took the server down
// (in about one bomb of three) when it next blocked in a system call. Threads made now are there
// then. Each goroutine wired to a thread parks it while it waits, so the runtime makes another
// for the rest; once they are released the threads stay, idle.
func spareThreads(n int) {
	var wired sync.WaitGroup
	release := make(chan struct{})
	for i := 0; i < n; i++ {
		wired.Add(1)
		go func() {
			runtime.LockOSThread()
			wired.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	wired.Wait()
	close(release)
}

// ignoreInKernel sets sig's disposition to SIG_IGN behind the Go runtime's back (package signal
// refuses to for the runtime's fault signals).
func ignoreInKernel(sig syscall.Signal) {
	// struct sigaction as the kernel takes it: handler, flags, restorer, mask (all but the handler 0).
	action := [4]uintptr{1} // SIG_IGN
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&action)), 0, 8, 0, 0)
}

// pokeReaper asks for a reap of orphans (a no-op for a server that is not pid 1).
func (s *server) pokeReaper() {
	if s.reapNow == nil {
		return
	}
	select {
	case s.reapNow <- struct{}{}:
	default:
	}
}

// reapOrphans reaps every zombie child that is not one of the worker's processes (those are
// reaped by their own waits, which need their exit status). While a process is being started its
// pid is not known yet: the reap waits until the start is done. It says whether /proc was read.
func (s *server) reapOrphans() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.starting > 0 {
		s.reapDeferred = true
		return true
	}
	ours := make(map[int]bool, len(s.children))
	for _, c := range s.children {
		if !c.reaped.Load() {
			ours[c.pid] = true
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil || pid == 1 || ours[pid] {
			continue
		}
		// Not a child, or still running: nothing happens.
		var status syscall.WaitStatus
		syscall.Wait4(pid, &status, syscall.WNOHANG, nil)
	}
	return true
}

// startDone ends a start begun with starting++ (under s.mu), holding s.mu, and says whether a
// reap deferred meanwhile is due.
func (s *server) startDone() (reap bool) {
	s.starting--
	if s.starting == 0 && s.reapDeferred {
		s.reapDeferred = false
		return true
	}
	return false
}
