package main

// The spawn server (`sandbox-init -spawn-server`): the worker's processes started by a small
// process of its own. A fork copies the page tables of the process that forks, so in a worker of
// several hundred MiB every spawn stalls its event loop for milliseconds; this process is a few
// MiB and Go starts children with vfork semantics. It serves one worker over its standard input
// and output, in frames: a 9-byte header (payload length and process id, big-endian uint32s,
// and a type byte) and the payload. The children get real pipes (a command may open
// /dev/stdout), which it relays. It dies with the worker: by PR_SET_PDEATHSIG, and when its
// standard input ends; the sandboxes it started die with it (bwrap --die-with-parent).

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Frame types: the worker's, then the server's. activities/sandbox/spawn-frames.ts holds the
// same list.
const (
	frameStart     = 1
	frameStdin     = 2
	frameStdinEnd  = 3
	frameSignal    = 4
	framePause     = 5
	frameResume    = 6
	frameStarted   = 11
	frameFailed    = 12
	frameStdout    = 13
	frameStderr    = 14
	frameExit      = 15
	frameStdoutEnd = 16
	frameStderrEnd = 17
	frameStdinAck  = 18
)

const maxFrame = 4 << 20

// contained is set for a server that runs inside a run's sandbox (`-spawn-server -contained`, the
// run's helper sandbox). It takes the sandbox's environment from -env and its limits from
// -limits, which it sets on each process it starts (this program again, which sets them and
// execs the process), never on itself: the Go runtime makes threads as it needs them, and a
// process's CPU time limit would run out over the server's life. Each process leads a group of
// its own, which is killed when it exits and takes the worker's group signals; output a process
// that left the group keeps open is cut off soon after, and whatever is left once the server
// runs nothing is killed. On the host side the worker signals groups itself.
var contained bool

// childLimits is -limits, for the processes of a contained server.
var childLimits string

// lookPathIn finds a program as a shell would with env's PATH (the last one, as exec.Cmd uses).
func lookPathIn(file string, env []string) (string, error) {
	if file == "" || strings.Contains(file, "/") {
		return file, nil
	}
	search := ""
	for _, entry := range env {
		if value, ok := strings.CutPrefix(entry, "PATH="); ok {
			search = value
		}
	}
	for _, dir := range filepath.SplitList(search) {
		if dir == "" {
			dir = "."
		}
		candidate := filepath.Join(dir, file)
		if info, err := os.Stat(candidate); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", file)
}

type startRequest struct {
	File   string   `json:"file"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Dir    string   `json:"dir"`
	Setsid bool     `json:"setsid"`
	Stdin  bool     `json:"stdin"`
	// The server's own environment under Env (a server inside a sandbox has the sandbox's).
	InheritEnv bool `json:"inheritEnv"`
	// Standard output goes to this file, which must exist, appended to, instead of a pipe: what
	// the process wrote is there even if the worker and this server die before reading it. The
	// worker reads the file itself; the stream's end is sent at once. Host-side servers only.
	StdoutFile string `json:"stdoutFile"`
}

type child struct {
	cmd *exec.Cmd
	// Chunks for standard input (nil: its end); nil without a pipe. The worker sends a chunk only
	// once the last is acknowledged, so a send here never waits.
	stdin  chan []byte
	exited chan struct{}
	mu     sync.Mutex
	resume *sync.Cond
	// Per output stream (stdout, stderr): the worker's reader is full.
	paused [2]bool
	// Bytes of output relayed so far.
	relayed atomic.Int64
	// Per output stream: its relay waits in a read of the pipe (not sending, not held back), or
	// it has ended.
	reading, ended [2]atomic.Bool
	pid            int
	// Its exit status has been taken: its pid may be another process's now.
	reaped atomic.Bool
}

type server struct {
	out      *os.File
	writeMu  sync.Mutex
	mu       sync.Mutex
	children map[uint32]*child
	// Processes being started, not yet in children.
	starting int
	// As pid 1 (reap.go): wakes the reaper of orphans, and a reap waits for a start to be done.
	reapNow      chan struct{}
	reapDeferred bool
}

func (s *server) send(id uint32, kind byte, payload []byte) {
	frame := make([]byte, 9+len(payload))
	binary.BigEndian.PutUint32(frame[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(frame[4:8], id)
	frame[8] = kind
	copy(frame[9:], payload)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.out.Write(frame); err != nil {
		// The worker is gone.
		os.Exit(0)
	}
}

func (s *server) sendJSON(id uint32, kind byte, value any) {
	payload, _ := json.Marshal(value)
	s.send(id, kind, payload)
}

func (s *server) lookup(id uint32) *child {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.children[id]
}

func (s *server) start(id uint32, payload []byte) {
	var req startRequest
	if err := json.Unmarshal(payload, &req); err != nil || req.File == "" {
		s.sendJSON(id, frameFailed, map[string]string{"message": "bad start request", "code": "EINVAL"})
		return
	}
	if req.StdoutFile != "" && contained {
		s.sendJSON(id, frameFailed, map[string]string{"message": "stdoutFile is for a server on the host side", "code": "EINVAL"})
		return
	}
	if contained {
		s.sweepIfIdle()
	}
	env := req.Env
	if req.InheritEnv {
		env = append(os.Environ(), req.Env...)
	}
	cmd := &exec.Cmd{Args: append([]string{req.File}, req.Args...), Env: env, Dir: req.Dir}
	if contained {
		// This program again, which sets the limits, finds the program on the process's PATH and
		// execs it (saying "command not found" with status 127 as a shell would).
		cmd.Path = "/proc/self/exe"
		cmd.Args = append([]string{"sandbox-init", "-limits", childLimits, "--", req.File}, req.Args...)
	} else {
		file, err := lookPathIn(req.File, env)
		if err != nil {
			s.sendJSON(id, frameFailed, map[string]string{"message": err.Error(), "code": "ENOENT"})
			return
		}
		cmd.Path = file
	}
	// Killed with this server, which is killed with the worker. (bwrap keeps that across its
	// change of uid with --die-with-parent.) Contained, each process leads a group of its own.
	pidfd := -1
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: req.Setsid || contained, Pdeathsig: syscall.SIGKILL, PidFD: &pidfd}
	var parentEnds, childEnds []*os.File
	closeAll := func(files []*os.File) {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, bool) {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(parentEnds)
			closeAll(childEnds)
			s.sendJSON(id, frameFailed, map[string]string{"message": err.Error(), "code": "EMFILE"})
			return nil, nil, false
		}
		return r, w, true
	}
	var stdinW *os.File
	if req.Stdin {
		r, w, ok := pipe()
		if !ok {
			return
		}
		cmd.Stdin, stdinW = r, w
		childEnds, parentEnds = append(childEnds, r), append(parentEnds, w)
	}
	var stdoutR, stdoutW *os.File
	if req.StdoutFile != "" {
		// Not followed if it is a link: the path is the worker's, in a directory of its own.
		f, err := os.OpenFile(req.StdoutFile, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0)
		if err != nil {
			closeAll(parentEnds)
			closeAll(childEnds)
			s.startFailed(id, err)
			return
		}
		stdoutW = f
		childEnds = append(childEnds, stdoutW)
	} else {
		r, w, ok := pipe()
		if !ok {
			return
		}
		stdoutR, stdoutW = r, w
		childEnds, parentEnds = append(childEnds, stdoutW), append(parentEnds, stdoutR)
	}
	stderrR, stderrW, ok := pipe()
	if !ok {
		return
	}
	childEnds, parentEnds = append(childEnds, stderrW), append(parentEnds, stderrR)
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	s.mu.Lock()
	s.starting++
	s.mu.Unlock()
	if err := cmd.Start(); err != nil {
		s.mu.Lock()
		reap := s.startDone()
		s.mu.Unlock()
		if reap {
			s.pokeReaper()
		}
		closeAll(childEnds)
		closeAll(parentEnds)
		s.startFailed(id, err)
		return
	}
	closeAll(childEnds)
	c := &child{cmd: cmd, exited: make(chan struct{}), pid: cmd.Process.Pid}
	if stdinW != nil {
		c.stdin = make(chan []byte, 4)
	}
	c.resume = sync.NewCond(&c.mu)
	s.mu.Lock()
	s.children[id] = c
	reap := s.startDone()
	s.mu.Unlock()
	if reap {
		s.pokeReaper()
	}
	s.sendJSON(id, frameStarted, map[string]int{"pid": cmd.Process.Pid})

	var relays sync.WaitGroup
	if stdoutR != nil {
		relays.Add(1)
		go s.relay(id, c, 0, stdoutR, frameStdout, frameStdoutEnd, &relays)
	} else {
		c.ended[0].Store(true)
		s.send(id, frameStdoutEnd, nil)
	}
	relays.Add(1)
	go s.relay(id, c, 1, stderrR, frameStderr, frameStderrEnd, &relays)
	if contained {
		go c.cutOffHeldOutput(&relays, stdoutR, stderrR)
	}
	if stdinW != nil {
		go s.feed(id, c, stdinW)
	}
	go func() {
		exited := sync.OnceFunc(func() {
			if contained {
				// What the process left in its group goes with it, as it would with a sandbox of
				// its own (while it is a zombie, no other process can have its group's id).
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			close(c.exited)
		})
		code, signal, ok := 0, 0, false
		if pidfd >= 0 {
			code, signal, ok = awaitExit(pidfd, exited)
		}
		if ok {
			cmd.Process.Release()
		} else {
			// No pidfd to wait on (an old kernel): a thread waits, as os/exec does.
			cmd.Wait()
			exited()
			code, signal = -1, int(syscall.SIGKILL)
			if cmd.ProcessState != nil {
				status := cmd.ProcessState.Sys().(syscall.WaitStatus)
				code, signal = status.ExitStatus(), 0
				if status.Signaled() {
					code, signal = -1, int(status.Signal())
				}
			}
		}
		c.reaped.Store(true)
		// An orphan that took its pid meanwhile was passed by.
		s.pokeReaper()
		s.sendJSON(id, frameExit, map[string]int{"code": code, "signal": signal})
		// The worker forgets the id once the output has ended too.
		relays.Wait()
		s.mu.Lock()
		delete(s.children, id)
		if contained && len(s.children) == 0 && s.starting == 0 {
			// Nothing of the worker's runs here now: whatever is left escaped a group, and goes.
			syscall.Kill(-1, syscall.SIGKILL)
		}
		s.mu.Unlock()
	}()
}

// startFailed tells the worker a process could not start: ENOENT for a missing file, else EACCES.
func (s *server) startFailed(id uint32, err error) {
	code := "EACCES"
	if errors.Is(err, fs.ErrNotExist) {
		code = "ENOENT"
	}
	s.sendJSON(id, frameFailed, map[string]string{"message": err.Error(), "code": code})
}

// sweepIfIdle kills whatever is left in a contained server's sandbox when none of the worker's
// processes runs any more (their output may still be draining), and empties /dev/shm: what starts
// next never meets what an earlier process left behind, as in a sandbox of its own.
func (s *server) sweepIfIdle() {
	s.mu.Lock()
	idle := s.starting == 0
	for _, c := range s.children {
		select {
		case <-c.exited:
		default:
			idle = false
		}
	}
	s.mu.Unlock()
	// Starts are read one at a time: none begins until this returns.
	if !idle {
		return
	}
	syscall.Kill(-1, syscall.SIGKILL)
	if entries, err := os.ReadDir("/dev/shm"); err == nil {
		for _, entry := range entries {
			os.RemoveAll(filepath.Join("/dev/shm", entry.Name()))
		}
	}
}

// relay sends one output pipe of a child to the worker, holding off while the worker has paused it.
func (s *server) relay(id uint32, c *child, stream int, from *os.File, data, end byte, done *sync.WaitGroup) {
	defer done.Done()
	defer from.Close()
	buf := make([]byte, 64<<10)
	for {
		c.mu.Lock()
		for c.paused[stream] {
			c.resume.Wait()
		}
		c.mu.Unlock()
		c.reading[stream].Store(true)
		n, err := from.Read(buf)
		c.reading[stream].Store(false)
		if n > 0 {
			s.send(id, data, buf[:n])
			c.relayed.Add(int64(n))
		}
		if err != nil {
			c.ended[stream].Store(true)
			s.send(id, end, nil)
			return
		}
	}
}

// feed writes what the worker sends to the child's standard input, acknowledging each chunk (the
// worker sends the next only then, so nothing piles up here). It ends with the input, or once the
// child has exited (a worker that gave up on the input never sends its end).
func (s *server) feed(id uint32, c *child, to *os.File) {
	defer to.Close()
	failed := false
	for {
		var chunk []byte
		select {
		case chunk = <-c.stdin:
		case <-c.exited:
			// What the worker sent meanwhile is refused, so that it never waits for an answer.
			for {
				select {
				case queued := <-c.stdin:
					if queued != nil {
						s.send(id, frameStdinAck, []byte("EPIPE"))
					}
				default:
					return
				}
			}
		}
		if chunk == nil {
			return
		}
		if failed {
			s.send(id, frameStdinAck, []byte("EPIPE"))
			continue
		}
		if _, err := to.Write(chunk); err != nil {
			failed = true
			to.Close()
			s.send(id, frameStdinAck, []byte("EPIPE"))
			continue
		}
		s.send(id, frameStdinAck, nil)
	}
}

func (s *server) handle(id uint32, kind byte, payload []byte) {
	if kind == frameStart {
		s.start(id, payload)
		return
	}
	c := s.lookup(id)
	if c == nil {
		return
	}
	switch kind {
	case frameStdin, frameStdinEnd:
		if c.stdin == nil {
			return
		}
		if kind == frameStdinEnd {
			payload = nil
		} else if payload == nil {
			payload = []byte{}
		}
		select {
		case c.stdin <- payload:
		default:
			// Only a worker that did not wait for acknowledgements gets here: never block the reader.
			s.send(id, frameStdinAck, []byte("EAGAIN"))
		}
	case frameSignal:
		var req struct {
			Signal int  `json:"signal"`
			Group  bool `json:"group"`
		}
		if json.Unmarshal(payload, &req) != nil {
			return
		}
		if req.Group && contained {
			select {
			case <-c.exited:
				// Its group was killed when it exited; the pid may be another's by now.
			default:
				syscall.Kill(-c.cmd.Process.Pid, syscall.Signal(req.Signal))
			}
		} else {
			// Through the process's pidfd: never a process that took the pid after it.
			c.cmd.Process.Signal(syscall.Signal(req.Signal))
		}
	case framePause, frameResume:
		if len(payload) != 1 || payload[0] > 1 {
			return
		}
		c.mu.Lock()
		c.paused[payload[0]] = kind == framePause
		c.mu.Unlock()
		c.resume.Broadcast()
	}
}

func spawnServer(envFile, limits string) {
	parent := os.Getppid()
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
	if os.Getppid() != parent {
		os.Exit(0)
	}
	// Its own descriptors are out of reach of processes of its uid (/proc/<pid>/fd of a process
	// that is not dumpable needs CAP_SYS_PTRACE); what it execs is dumpable again. In a sandbox
	// it is pid 1, so no other process there holds its pipes.
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0)
	// It waits on pipes and processes: one thread runs Go code, and fewer threads count against a
	// run's process limit when it runs in the run's cgroup.
	runtime.GOMAXPROCS(1)
	if contained {
		loadEnvironment(envFile)
		childLimits = limits
	}
	s := &server{out: os.Stdout, children: map[uint32]*child{}}
	if os.Getpid() == 1 {
		s.becomeInit()
	}
	in := bufio.NewReaderSize(os.Stdin, 256<<10)
	header := make([]byte, 9)
	for {
		if _, err := io.ReadFull(in, header); err != nil {
			break
		}
		size := binary.BigEndian.Uint32(header[0:4])
		id := binary.BigEndian.Uint32(header[4:8])
		if size > maxFrame {
			if _, err := in.Discard(int(size)); err != nil {
				break
			}
			if header[8] == frameStart {
				s.sendJSON(id, frameFailed, map[string]string{"message": "start request too large", "code": "E2BIG"})
			}
			continue
		}
		payload := make([]byte, size)
		if _, err := io.ReadFull(in, payload); err != nil {
			break
		}
		s.handle(id, header[8], payload)
	}
	// The worker has gone: so do the processes it started.
	s.mu.Lock()
	for _, c := range s.children {
		if c.cmd.SysProcAttr.Setsid {
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		}
		c.cmd.Process.Kill()
	}
	s.mu.Unlock()
	os.Exit(0)
}
