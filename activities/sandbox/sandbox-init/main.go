// sandbox-init is the first program of every sandboxed process: it sets the process's resource
// limits, offers the worker's Unix sockets (egress proxy, model gateway) as TCP ports on the
// sandbox's own loopback, and then runs the command. It is a static binary with no dependency on
// the filesystem it runs in, so it works on any image: glibc, musl, distroless, no shell.
//
//	sandbox-init -limits core=0,nproc=64,data=2147483648,fsize=1073741824,cpu=600,nofile=1024 \
//	  [-bridge /run/agent-runs/proxy.sock=3128;...] -- argv...
//
// Without bridges it becomes the command (exec); with bridges it stays as the command's parent,
// forwarding connections and signals, and exits with the command's status (128+n for signal n).
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
				go func() { io.Copy(upstream, client); upstream.(*net.UnixConn).CloseWrite(); done <- struct{}{} }()
				go func() { io.Copy(client, upstream); client.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				<-done
				<-done
			}()
		}
	}()
}

func lookPath(file string) string {
	resolved, err := exec.LookPath(file)
	if err == nil {
		return resolved
	}
	if errors.Is(err, os.ErrPermission) {
		fail(126, "%s: permission denied", file)
	}
	fail(127, "%s: command not found", file)
	return ""
}

func main() {
	limits := flag.String("limits", "", "name=value,... (core, nproc, data, fsize, cpu, nofile)")
	bridges := flag.String("bridge", "", "socket=port;... to offer on the loopback")
	flag.Parse()
	argv := flag.Args()
	if len(argv) == 0 {
		fail(125, "no command")
	}
	if *bridges == "" {
		setLimits(*limits)
		file := lookPath(argv[0])
		err := syscall.Exec(file, argv, os.Environ())
		fail(126, "%s: %v", argv[0], err)
	}
	for _, pair := range strings.Split(*bridges, ";") {
		at := strings.LastIndex(pair, "=")
		port, err := strconv.Atoi(pair[at+1:])
		if at < 0 || err != nil {
			fail(125, "bad bridge %q", pair)
		}
		bridge(pair[:at], port)
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// The limits are the command's; set last, so that the bridge's own threads are already made.
	setLimits(*limits)
	cmd := exec.Command(lookPath(argv[0]), argv[1:]...)
	cmd.Args = argv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fail(126, "%s: %v", argv[0], err)
	}
	go func() {
		for sig := range signals {
			cmd.Process.Signal(sig)
		}
	}()
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		fail(125, "%s: %v", argv[0], err)
	}
	status := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if status.Signaled() {
		os.Exit(128 + int(status.Signal()))
	}
	os.Exit(status.ExitStatus())
}
