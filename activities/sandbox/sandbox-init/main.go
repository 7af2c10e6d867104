// sandbox-init is the first program of every sandboxed process: it sets the process's resource
// limits (and refuses it other processes': seccomp.go), offers the worker's Unix sockets (egress
// proxy, model gateway) as TCP ports on the sandbox's own loopback, and then runs the command. It is a static binary with no dependency on
// the filesystem it runs in, so it works on any image: glibc, musl, distroless, no shell.
//
//	sandbox-init -env /run/agent-runs/env \
//	  -limits core=0,nproc=64,data=2147483648,fsize=1073741824,cpu=600,nofile=1024 \
//	  [-bridge /run/agent-runs/proxy.sock=3128;...] -- argv...
//
// The environment comes from the -env file (NAME=value entries separated by NUL), never from the
// host side that started the sandbox. As the sandbox's pid 1, or with bridges, it stays as the
// command's parent, forwarding connections and signals and reaping orphans, and exits with the
// command's status (128+n for signal n); otherwise it becomes the command (exec). The limits are then set in the command's process
// only (a fresh sandbox-init that execs it), never on the bridge: the Go runtime makes threads
// as it needs them, and a command at its process limit must not take the bridge down.
//
// `sandbox-init -checkpoint` and `-restore` are two more: they read and make a run's files for its
// checkpoints on the host side (checkpoint.go, restore.go); `-watch` follows the changes of a
// run's own filesystem so that a checkpoint looks at those only (watch.go, checkpoint_delta.go).
//
// `sandbox-init -spawn-server` is another program in the same binary, run on the host side by
// the worker: it starts the worker's processes for it (spawner.go). With -contained it runs
// inside a run's helper sandbox and starts the platform's own helpers there (git, the file
// tools), or inside a run's command sandbox, with the bridges of its network, and starts the
// agent's commands there (activities/sandbox/command-sandbox.ts).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const name = "sandbox"

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, name+": "+format+"\n", args...)
	os.Exit(code)
}

var resources = map[string]int{
	"core":   syscall.RLIMIT_CORE,
	"nproc":  6, // RLIMIT_NPROC, which package syscall does not name
	"data":   syscall.RLIMIT_DATA,
	"fsize":  syscall.RLIMIT_FSIZE,
	"cpu":    syscall.RLIMIT_CPU,
	"nofile": syscall.RLIMIT_NOFILE,
}

// setLimits sets soft and hard limit alike, as `ulimit` does; nofile never goes above the hard
// limit the process already has.
func setLimits(spec string) {
	if spec == "" {
		return
	}
	for _, item := range strings.Split(spec, ",") {
		key, value, ok := strings.Cut(item, "=")
		resource, known := resources[key]
		n, err := strconv.ParseUint(value, 10, 64)
		if !ok || !known || err != nil {
			fail(125, "bad limit %q", item)
		}
		if resource == syscall.RLIMIT_NOFILE {
			var current syscall.Rlimit
			if err := syscall.Getrlimit(resource, &current); err == nil && current.Max < n {
				n = current.Max
			}
		}
		if err := syscall.Setrlimit(resource, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			fail(125, "cannot set the %s limit: %v", key, err)
		}
	}
}

// loadEnvironment replaces the process's environment with the file's entries.
func loadEnvironment(file string) {
	if file == "" {
		return
	}
	data, err := os.ReadFile(file)
	if err != nil {
		fail(125, "cannot read the environment: %v", err)
	}
	os.Clearenv()
	for _, entry := range strings.Split(string(data), "\x00") {
		if name, value, ok := strings.Cut(entry, "="); ok && name != "" {
			os.Setenv(name, value)
		}
	}
}

// relay copies one direction of a bridged connection; at its end the peer gets EOF, and on an
// error both sides are closed so that the other direction cannot hang.
func relay(to, from net.Conn, closeWrite func() error, done chan<- struct{}) {
	if _, err := io.Copy(to, from); err != nil {
		to.Close()
		from.Close()
	} else {
		closeWrite()
	}
	done <- struct{}{}
}

// bridge forwards every connection to 127.0.0.1:port to the Unix socket.
func bridge(socketPath string, port int) {
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		fail(125, "network bridge failed: %v", err)
	}
	go func() {
		for {
			client, err := listener.Accept()
			if err != nil {
				// Out of descriptors, say: wait instead of spinning.
				time.Sleep(50 * time.Millisecond)
				continue
			}
			go func() {
				defer client.Close()
				upstream, err := net.Dial("unix", socketPath)
				if err != nil {
					return
				}
				defer upstream.Close()
				done := make(chan struct{}, 2)
				go relay(upstream, client, upstream.(*net.UnixConn).CloseWrite, done)
				go relay(client, upstream, client.(*net.TCPConn).CloseWrite, done)
				<-done
				<-done
			}()
		}
	}()
}

// startBridges starts a bridge for each socket=port of -bridge.
func startBridges(bridges string) {
	for _, pair := range strings.Split(bridges, ";") {
		at := strings.LastIndex(pair, "=")
		port, err := strconv.Atoi(pair[at+1:])
		if at < 0 || err != nil {
			fail(125, "bad bridge %q", pair)
		}
		bridge(pair[:at], port)
	}
}

func lookPath(file string) string {
	resolved, err := exec.LookPath(file)
	// A PATH entry relative to the working directory is used, as a shell would.
	if err == nil || errors.Is(err, exec.ErrDot) {
		return resolved
	}
	if errors.Is(err, os.ErrPermission) {
		fail(126, "%s: permission denied", file)
	}
	fail(127, "%s: command not found", file)
	return ""
}

func main() {
	envFile := flag.String("env", "", "file of NAME=value entries separated by NUL: the whole environment")
	limits := flag.String("limits", "", "name=value,... (core, nproc, data, fsize, cpu, nofile)")
	bridges := flag.String("bridge", "", "socket=port;... to offer on the loopback")
	serve := flag.Bool("spawn-server", false, "start the worker's processes for it (spawner.go)")
	flag.BoolVar(&contained, "contained", false, "with -spawn-server: serve from inside a run's sandbox (spawner.go)")
	checkpoint := flag.Bool("checkpoint", false, "write what changed in a run's files since -index as a tar stream (checkpoint.go)")
	indexOnly := flag.Bool("index-only", false, "with -checkpoint: write the index of the files only")
	checkpointID := flag.String("id", "", "with -checkpoint: the checkpoint the index written is of")
	parentID := flag.String("parent", "", "with -checkpoint: the checkpoint -index should be of (else every file is listed)")
	restore := flag.Bool("restore", false, "make a run's files from a tar stream on standard input (restore.go)")
	roots := flag.String("root", "", "with -checkpoint or -restore: name=/path,... of the trees; with -watch: name=dir,... below it")
	index := flag.String("index", "", "with -checkpoint: the stat index of the last checkpoint")
	exclude := flag.String("exclude", "", "with -checkpoint: name/path,... left out")
	excludeNames := flag.String("exclude-name", "", "with -checkpoint: file names left out wherever they are")
	watch := flag.String("watch", "", "follow the changes on the filesystem mounted here for checkpoints (watch.go)")
	socket := flag.String("socket", "", "with -watch: where to answer checkpoints; with -checkpoint: the watcher to ask")
	uid := flag.Int("uid", -1, "with -restore: the owner of what it makes (-1: the caller)")
	gid := flag.Int("gid", -1, "with -restore: the group of what it makes")
	flag.Parse()
	if *checkpoint {
		checkpointMain(checkpointRequest{Roots: *roots, Index: *index, Exclude: *exclude, ExcludeNames: *excludeNames,
			IndexOnly: *indexOnly, Checkpoint: *checkpointID, Parent: *parentID}, *socket)
		return
	}
	if *watch != "" {
		watchMain(*watch, *socket, *roots)
		return
	}
	if *restore {
		restoreMain(*roots, *uid, *gid)
		return
	}
	if *serve {
		// A run's command sandbox serves its commands with the network they would have had.
		if *bridges != "" {
			if !contained {
				fail(125, "-bridge with -spawn-server needs -contained")
			}
			startBridges(*bridges)
		}
		spawnServer(*envFile, *limits)
	}
	argv := flag.Args()
	if len(argv) == 0 {
		fail(125, "no command")
	}
	loadEnvironment(*envFile)
	if *bridges == "" && os.Getpid() != 1 {
		setLimits(*limits)
		refuseOthersLimits()
		file := lookPath(argv[0])
		err := syscall.Exec(file, argv, os.Environ())
		fail(126, "%s: %v", argv[0], err)
	}
	if *bridges != "" {
		startBridges(*bridges)
	}
	runAsParent(*limits, argv)
}

// runAsParent runs the command under its limits as this process's child (this program again,
// without bridges, which sets them and execs it), forwards signals to it, reaps whatever else
// ends below it (as the sandbox's pid 1, bwrap --as-pid-1, it inherits every orphan), and exits
// with the command's status. Being pid 1 itself, with only sandbox paths in its command line,
// keeps bubblewrap's own init, whose command line names the host's paths, out of the sandbox.
func runAsParent(limits string, argv []string) {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	self := "/proc/self/exe"
	command, err := os.StartProcess(self, append([]string{self, "-limits", limits, "--"}, argv...), &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		fail(126, "%s: %v", argv[0], err)
	}
	go func() {
		for sig := range signals {
			command.Signal(sig)
		}
	}()
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, 0, nil)
		if err == syscall.EINTR || (err == nil && pid != command.Pid) {
			continue
		}
		if err != nil {
			fail(125, "%s: %v", argv[0], err)
		}
		if status.Signaled() {
			os.Exit(128 + int(status.Signal()))
		}
		os.Exit(status.ExitStatus())
	}
}
