package main

// A contained server is its sandbox's pid 1 (bwrap --as-pid-1), and so out of reach of what runs
// there: the kernel gives a pid namespace's init only the signals it handles from inside, never
// SIGKILL or SIGSTOP, and `kill -1` passes it by. A command's `kill -9 -1` leaves the server that
// relays its output, and the network bridges, alone. As pid 1 it is also the parent of every
// process whose own parent has gone, and reaps them: zombies would count against the run's
// process limit for as long as the sandbox stays up.

import (
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

// becomeInit handles every signal, so that none from the sandbox ends the server (the Go
// runtime's default for SIGTERM, SIGHUP or a SIGSEGV sent with kill is to exit), and reaps
// orphans on each SIGCHLD.
func (s *server) becomeInit() {
	s.reapNow = make(chan struct{}, 1)
	signals := make(chan os.Signal, 16)
	signal.Notify(signals)
	go func() {
		for sig := range signals {
			if sig == syscall.SIGCHLD {
				s.pokeReaper()
			}
		}
	}()
	go func() {
		for range s.reapNow {
			s.reapOrphans()
		}
	}()
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
// pid is not known yet: the reap waits until the start is done.
func (s *server) reapOrphans() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.starting > 0 {
		s.reapDeferred = true
		return
	}
	ours := make(map[int]bool, len(s.children))
	for _, c := range s.children {
		if !c.reaped.Load() {
			ours[c.pid] = true
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
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
